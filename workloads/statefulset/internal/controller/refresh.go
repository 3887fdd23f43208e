package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
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
	if fin.done && plan.Revision(p) == revs.update.Name {
		intent = lifecycle.IntentUpdateFinished
	}
	if err := r.applyDecision(ctx, set, p, lifecycle.Plan(set.Spec.Lifecycle, p, intent), fin.status); err != nil {
		return err
	}
	if fin.started != nil {
		podMetrics.ObserveInPlace(*fin.started, fin.at)
	}
	return nil
}

// inPlaceFinish is how far a pod's in-place update has come.
type inPlaceFinish struct {
	// done: no in-place update is pending once status is written.
	done bool
	// status is the status change that finishes the update (or initialises the readiness gates); nil if none.
	status func(*corev1.Pod) bool
	// started is when the update this pass completes began, for the duration metric; at is now.
	started *time.Time
	at      time.Time
}

// finishInPlace tells whether the pod has an in-place update pending, and which status change finishes it:
// InPlaceUpdateReady back to True once the kubelet runs every updated container. A pod whose gates were never
// initialised (its creation-time write failed, or another controller created it) gets them initialised.
func (r *Reconciler) finishInPlace(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, p *corev1.Pod) (inPlaceFinish, error) {
	at := metav1.NewTime(r.Clock.Now())
	if inplaceupdate.Uninitialized(p) || podreadiness.NeedsCondition(p) {
		return inPlaceFinish{done: true, status: initReadiness(at)}, nil
	}
	if inplaceupdate.Ready(p) {
		return inPlaceFinish{done: true}, nil
	}
	if held, err := r.resumeAfterGrace(ctx, set, w, p); held || err != nil {
		return inPlaceFinish{}, err
	}
	done, err := inplaceupdate.Completed(p)
	if err != nil {
		r.Recorder.Eventf(set, p, corev1.EventTypeWarning, "InvalidInPlaceUpdateState", "Update", "pod %s: %v", p.Name, err)
		return inPlaceFinish{}, nil
	}
	if !done {
		return inPlaceFinish{}, nil
	}
	fin := inPlaceFinish{done: true, at: at.Time, status: func(p *corev1.Pod) bool { return inplaceupdate.SetReady(p, true, at) }}
	if state, _ := kruiseappspub.ParseInPlaceUpdateState(p); state != nil {
		fin.started = &state.UpdateTimestamp.Time
	}
	return fin, nil
}

// resumeAfterGrace applies an update deferred by inPlaceUpdateStrategy.gracePeriodSeconds once its grace is
// over; until then the pod is held and the reconcile asks to look again when the grace ends.
func (r *Reconciler) resumeAfterGrace(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, p *corev1.Pod) (held bool, err error) {
	spec, left, deferred, err := inplaceupdate.Deferred(p, r.Clock.Now())
	switch {
	case err != nil:
		r.Recorder.Eventf(set, p, corev1.EventTypeWarning, "InvalidInPlaceUpdateState", "Update", "pod %s: %v", p.Name, err)
		return true, nil
	case !deferred:
		return false, nil
	case left > 0:
		w.wakeIn(left)
		return true, nil
	}
	return true, r.patchPod(ctx, set, p, func(p *corev1.Pod) bool { inplaceupdate.Resume(p, spec); return true })
}
