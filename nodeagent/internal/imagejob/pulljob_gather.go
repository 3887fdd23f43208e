package imagejob

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/imagejob/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/imagepullspec"
)

// specError is a job spec the controller cannot act on.
type specError struct{ err error }

func (e specError) Error() string { return e.err.Error() }
func (e specError) Unwrap() error { return e.err }

func isSpecError(err error) bool {
	var se specError
	return errors.As(err, &se)
}

// gather reads what a reconcile of an unfinished job plans from, all from the cache: every NodeImage (read
// only: the list is not copied), and for a podSelector the nodes of the matching pods.
func (r *PullJobReconciler) gather(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob) (plan.Input, error) {
	image, tag, err := imagepullspec.SplitImage(job.Spec.Image)
	if err != nil {
		return plan.Input{}, specError{fmt.Errorf("spec.image: %w", err)}
	}
	list := &kruiseappsv1alpha1.NodeImageList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return plan.Input{}, fmt.Errorf("listing NodeImages: %w", err)
	}
	all := make([]*kruiseappsv1alpha1.NodeImage, 0, len(list.Items))
	existing := make(map[string]bool, len(list.Items))
	for i := range list.Items {
		all = append(all, &list.Items[i])
		existing[list.Items[i].Name] = true
	}
	podNodes, err := r.podNodes(ctx, job)
	if err != nil {
		return plan.Input{}, err
	}
	selected, err := plan.SelectNodes(job, all, podNodes)
	if err != nil {
		return plan.Input{}, specError{err}
	}
	return plan.Input{Now: r.Clock.Now(), Job: job, Image: image, Tag: tag, Selected: selected, Existing: existing}, nil
}

// podNodes are the nodes running the pods of the job's namespace its podSelector matches; nil without one.
// Pods that ended or are going do not count: they will not use the image.
func (r *PullJobReconciler) podNodes(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob) (map[string]bool, error) {
	sel, err := plan.PodSelector(job)
	if err != nil || sel == nil {
		return nil, specErrorOrNil(err)
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabelsSelector{Selector: sel},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the pods of the podSelector: %w", err)
	}
	nodes := map[string]bool{}
	for i := range pods.Items {
		if p := &pods.Items[i]; placed(p) {
			nodes[p.Spec.NodeName] = true
		}
	}
	return nodes, nil
}

// placed tells a pod on a node that keeps running there.
func placed(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func specErrorOrNil(err error) error {
	if err == nil {
		return nil
	}
	return specError{err}
}
