package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// adopt makes the CloneSet the controller of the orphan pods its selector matches, as upstream (and every
// built-in workload controller) does: a pod left behind by a deleted owner, or created by hand with the
// CloneSet's labels, is counted and managed instead of running beside it. Pods another controller owns, and
// pods being deleted, are left alone. It returns the pods it adopted.
func (r *Reconciler) adopt(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, pods []corev1.Pod) ([]*corev1.Pod, error) {
	var adopted []*corev1.Pod
	var errs []error
	for i := range pods {
		p := &pods[i]
		if metav1.GetControllerOf(p) != nil || p.DeletionTimestamp != nil {
			continue
		}
		switch err := r.patchPod(ctx, cs, p, func(p *corev1.Pod) bool { return own(p, cs) }); {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Gone, or changed (perhaps adopted by another): the next reconcile looks again.
		case err != nil:
			errs = append(errs, fmt.Errorf("adopt: %w", err))
		default:
			r.Recorder.Eventf(cs, p, corev1.EventTypeNormal, "SuccessfulAdopt", "Adopt", "adopted orphan pod %s", p.Name)
			adopted = append(adopted, p)
		}
	}
	return adopted, errors.Join(errs...)
}

// own adds the CloneSet's controller reference to the pod.
func own(p *corev1.Pod, cs *kruiseappsv1alpha1.CloneSet) bool {
	p.OwnerReferences = append(p.OwnerReferences, *metav1.NewControllerRef(cs, cloneSetKind))
	return true
}
