package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// PodOf reads the pod a request names: nil when the name cannot be a pod's (validation reports it) or no
// such pod exists, which the webhook and the manager's controller each answer in their own way.
func PodOf(ctx context.Context, r client.Reader, crr *kruiseappsv1alpha1.ContainerRecreateRequest) (*corev1.Pod, error) {
	if !PodNameIsValid(crr.Spec.PodName) {
		return nil, nil
	}
	pod := &corev1.Pod{}
	err := r.Get(ctx, client.ObjectKey{Namespace: crr.Namespace, Name: crr.Spec.PodName}, pod)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading pod %s/%s: %w", crr.Namespace, crr.Spec.PodName, err)
	}
	return pod, nil
}
