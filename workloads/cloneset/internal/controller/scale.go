package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/plan"
)

// scale applies a scale decision: deletions first, then creations; a limited scale-up is reported the way
// upstream reports it.
func (r *Reconciler) scale(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, revs *revisions, s plan.Scale) error {
	if s.Limited {
		r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, "ScaleUpLimited", "Scale",
			"scaleUp is limited because of scaleStrategy.maxUnavailable, limit: %d", s.Limit)
	}
	if err := r.deletePods(ctx, cs, w, s.Delete); err != nil {
		return err
	}
	return r.createPods(ctx, cs, w, revs, s.Create)
}
