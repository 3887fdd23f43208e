package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
	"github.com/flotilla-dev/flotilla/workloads/podmetrics"
)

// deletePods deletes pods the plan gave up, each through its preDelete hook.
func (r *Reconciler) deletePods(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, pods []*corev1.Pod) error {
	for _, p := range pods {
		if err := r.deletePod(ctx, cs, w, p); err != nil {
			return err
		}
	}
	return nil
}

// deletePod deletes a pod and its claims, unless a preDelete hook holds it: then the pod only moves to
// PreparingDelete and is deleted by a later reconcile, once the hook's owner lets go.
func (r *Reconciler) deletePod(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, p *corev1.Pod) error {
	d := decide(cs, p, lifecycle.IntentDelete)
	if err := r.applyDecision(ctx, cs, p, d, nil); err != nil || !d.Proceed {
		return err
	}
	if err := r.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		podMetrics.Count(podmetrics.Delete, err)
		r.Recorder.Eventf(cs, p, corev1.EventTypeWarning, "FailedDelete", "Delete", "failed to delete pod %s: %v", p.Name, err)
		return fmt.Errorf("delete pod %s: %w", p.Name, err)
	}
	podMetrics.Count(podmetrics.Delete, nil)
	r.expectations.Deleted(client.ObjectKeyFromObject(cs), p.UID)
	r.Recorder.Eventf(cs, p, corev1.EventTypeNormal, "SuccessfulDelete", "Delete", "succeed to delete pod %s", p.Name)
	return r.deleteClaims(ctx, w, p.Labels[kruiseappsv1alpha1.CloneSetInstanceID])
}

// deleteClaims deletes the claims of an instance the controller itself removes (scale-down, recreate).
func (r *Reconciler) deleteClaims(ctx context.Context, w *world, id string) error {
	for _, c := range w.claims {
		if id == "" || c.Labels[kruiseappsv1alpha1.CloneSetInstanceID] != id || c.DeletionTimestamp != nil {
			continue
		}
		if err := r.Client.Delete(ctx, c, client.Preconditions{UID: &c.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete claim %s: %w", c.Name, err)
		}
	}
	return nil
}

// cleanupClaims deletes the claims no pod uses once the CloneSet has all its pods (so none is waiting to
// be reused), or at once when reuse is disabled.
func (r *Reconciler) cleanupClaims(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, in plan.Input) error {
	if !cs.Spec.ScaleStrategy.DisablePVCReuse && int32(len(in.Pods)) < in.Strategy.Replicas { //nolint:gosec // pod counts fit
		return nil
	}
	for _, id := range w.freeIDs() {
		if err := r.deleteClaims(ctx, w, id); err != nil {
			return err
		}
	}
	return nil
}
