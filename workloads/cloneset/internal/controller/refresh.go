package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
)

// refresh moves every pod along what it is already doing: an in-place update the kubelet finished becomes
// ready again, lifecycle states advance as hooks allow, and a pod preparing deletion is deleted once its
// hook lets go. Pods are refreshed concurrently (eachPod).
func (r *Reconciler) refresh(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, revs *revisions) error {
	return eachPod(w.pods, func(p *corev1.Pod) error {
		if p.DeletionTimestamp != nil {
			return nil
		}
		return r.refreshPod(ctx, cs, w, revs, p)
	})
}

func (r *Reconciler) refreshPod(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, revs *revisions, p *corev1.Pod) error {
	if lifecycle.State(p) == kruiseappspub.LifecycleStatePreparingDelete {
		return r.deletePod(ctx, cs, w, p)
	}
	fin, err := r.finishInPlace(ctx, cs, w, p)
	if err != nil {
		return err
	}
	d := decide(cs, p, settleIntent(p, revs.update.Name, fin.Done))
	if err := r.applyDecision(ctx, cs, p, d, fin.Status); err != nil {
		return err
	}
	if fin.Started != nil {
		podMetrics.ObserveInPlace(*fin.Started, fin.At)
	}
	return nil
}

// finishInPlace is how far the pod's in-place update has come (inplaceupdate.Advance).
func (r *Reconciler) finishInPlace(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, p *corev1.Pod) (inplaceupdate.Progress, error) {
	return inplaceupdate.Advance(p, r.Clock.Now(), inplaceupdate.Hooks{
		Warn: func(p *corev1.Pod, err error) {
			r.Recorder.Eventf(cs, p, corev1.EventTypeWarning, "InvalidInPlaceUpdateState", "Update", "pod %s: %v", p.Name, err)
		},
		WakeIn: w.wakeIn,
		Resume: func(p *corev1.Pod, s *inplaceupdate.Spec) error {
			return r.patchPod(ctx, cs, p, func(p *corev1.Pod) bool { inplaceupdate.Resume(p, s); return true })
		},
	})
}
