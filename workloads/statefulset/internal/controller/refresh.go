package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/plan"
)

// refresh moves every pod along what it is already doing: a deferred in-place update starts once its grace
// is over, an in-place update the kubelet finished becomes ready again, lifecycle states advance as hooks
// allow, and a pod preparing deletion is deleted once its hook lets go.
func (r *Reconciler) refresh(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, revs *revisions) error {
	return eachPod(w.pods, func(p *corev1.Pod) error {
		if p.DeletionTimestamp != nil {
			return nil
		}
		if lifecycle.State(p) == kruiseappspub.LifecycleStatePreparingDelete {
			return r.deletePod(ctx, set, p)
		}
		return r.refreshPod(ctx, set, w, revs, p)
	})
}

func (r *Reconciler) refreshPod(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, revs *revisions, p *corev1.Pod) error {
	fin, err := r.finishInPlace(ctx, set, w, p)
	if err != nil {
		return err
	}
	intent := lifecycle.IntentSettle
	if fin.Done && plan.Revision(p) == revs.update.Name {
		intent = lifecycle.IntentUpdateFinished
	}
	if err := r.applyDecision(ctx, set, p, lifecycle.Plan(set.Spec.Lifecycle, p, intent), fin.Status); err != nil {
		return err
	}
	if fin.Started != nil {
		podMetrics.ObserveInPlace(*fin.Started, fin.At)
	}
	return nil
}

// finishInPlace is how far the pod's in-place update has come (inplaceupdate.Advance).
func (r *Reconciler) finishInPlace(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, p *corev1.Pod) (inplaceupdate.Progress, error) {
	return inplaceupdate.Advance(p, r.Clock.Now(), inplaceupdate.Hooks{
		Warn: func(p *corev1.Pod, err error) {
			r.Recorder.Eventf(set, p, corev1.EventTypeWarning, "InvalidInPlaceUpdateState", "Update", "pod %s: %v", p.Name, err)
		},
		WakeIn: w.wakeIn,
		Resume: func(p *corev1.Pod, s *inplaceupdate.Spec) error {
			return r.patchPod(ctx, set, p, func(p *corev1.Pod) bool { inplaceupdate.Resume(p, s); return true })
		},
	})
}
