package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
)

// decide asks the lifecycle hooks what the pod may do.
func decide(cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod, intent lifecycle.Intent) lifecycle.Decision {
	return lifecycle.Plan(cs.Spec.Lifecycle, p, intent)
}

// applyDecision writes a lifecycle decision together with the status change pending for the pod (nil when
// none). With lifecycle hooks, the KruisePodReady holders are written first (so that the hook's operator
// sees the pod out of its endpoints before it sees the state it acts on), then the state label; without
// them, one write carries both.
func (r *Reconciler) applyDecision(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod, d lifecycle.Decision, pending func(*corev1.Pod) bool) error {
	now := r.Clock.Now()
	if pending == nil && lifecycle.State(p) == d.State && !lifecycle.ReadinessChanges(p, d) {
		// The common case on every reconcile: spare the writers' deep copies of every pod.
		return nil
	}
	status := func(p *corev1.Pod) bool {
		changed := pending != nil && pending(p)
		return lifecycle.ApplyReadiness(p, d, now) || changed
	}
	switch {
	case lifecycle.State(p) == d.State:
		return r.patchPodStatus(ctx, cs, p, status)
	case cs.Spec.Lifecycle == nil:
		return r.patchStatusAndState(ctx, cs, p, status, d.State)
	}
	if err := r.patchPodStatus(ctx, cs, p, status); err != nil {
		return err
	}
	return r.patchPod(ctx, cs, p, func(p *corev1.Pod) bool { return lifecycle.SetState(p, d.State, now) })
}

// settleIntent is what refresh asks for a pod: a pod that runs the update revision and is done with its
// in-place update finishes the update; any other only settles.
func settleIntent(p *corev1.Pod, updateRevision string, inPlaceDone bool) lifecycle.Intent {
	s := lifecycle.State(p)
	updating := s == kruiseappspub.LifecycleStateUpdating || s == kruiseappspub.LifecycleStatePreparingUpdate
	if updating && plan.Revision(p) == updateRevision && inPlaceDone {
		return lifecycle.IntentUpdateFinished
	}
	return lifecycle.IntentSettle
}
