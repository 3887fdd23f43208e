package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
)

// applyDecision writes a lifecycle decision together with the status change pending for the pod (nil when
// none). With lifecycle hooks, the KruisePodReady holders are written first, so that the hook's operator sees
// the pod out of its endpoints before it sees the state it acts on; without them one status write carries
// both (the pods/status endpoint keeps label changes).
func (r *Reconciler) applyDecision(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, p *corev1.Pod, d lifecycle.Decision, pending func(*corev1.Pod) bool) error {
	now := r.Clock.Now()
	if pending == nil && lifecycle.State(p) == d.State && !lifecycle.ReadinessChanges(p, d) {
		// The common case on every reconcile: spare the writers' deep copies of every pod.
		return nil
	}
	status := func(p *corev1.Pod) bool {
		changed := pending != nil && pending(p)
		return lifecycle.ApplyReadiness(p, d, now) || changed
	}
	if set.Spec.Lifecycle == nil || lifecycle.State(p) == d.State {
		return r.patchPodStatus(ctx, set, p, func(p *corev1.Pod) bool {
			changed := status(p)
			return lifecycle.SetState(p, d.State, now) || changed
		})
	}
	if err := r.patchPodStatus(ctx, set, p, status); err != nil {
		return err
	}
	return r.patchPod(ctx, set, p, func(p *corev1.Pod) bool { return lifecycle.SetState(p, d.State, now) })
}
