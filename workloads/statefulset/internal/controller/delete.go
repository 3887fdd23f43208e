package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
	"github.com/flotilla-dev/flotilla/workloads/podmetrics"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/plan"
)

// deletePods deletes the planned pods, each through its preDelete hook. A finished pod is reported first, as
// the native StatefulSet does.
func (r *Reconciler) deletePods(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, deletions []plan.Deletion) error {
	errs := make([]error, 0, len(deletions))
	for _, d := range deletions {
		if d.Reason == plan.ReasonFinished {
			r.Recorder.Eventf(set, d.Pod, corev1.EventTypeWarning, "RecreatingFailedPod", "Delete",
				"StatefulSet %s/%s is recreating failed Pod %s", set.Namespace, set.Name, d.Pod.Name)
		}
		errs = append(errs, r.deletePod(ctx, set, d.Pod))
	}
	return errors.Join(errs...)
}

// deletePod deletes a pod, unless a preDelete hook holds it: then the pod only moves to PreparingDelete and
// is deleted by a later reconcile, once the hook's owner lets go. The pod is marked terminating in memory so
// the rest of the pass counts it so.
func (r *Reconciler) deletePod(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, p *corev1.Pod) error {
	d := lifecycle.Plan(set.Spec.Lifecycle, p, lifecycle.IntentDelete)
	if err := r.applyDecision(ctx, set, p, d, nil); err != nil || !d.Proceed {
		return err
	}
	err := r.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	podMetrics.Count(podmetrics.Delete, err)
	if err != nil {
		r.Recorder.Eventf(set, p, corev1.EventTypeWarning, "FailedDelete", "Delete",
			"delete Pod %s in StatefulSet %s failed error: %v", p.Name, set.Name, err)
		return fmt.Errorf("delete pod %s: %w", p.Name, err)
	}
	r.expectations.Deleted(client.ObjectKeyFromObject(set), p.UID)
	r.Recorder.Eventf(set, p, corev1.EventTypeNormal, "SuccessfulDelete", "Delete", "delete Pod %s in StatefulSet %s successful", p.Name, set.Name)
	p.DeletionTimestamp = &metav1.Time{Time: r.Clock.Now()}
	return nil
}
