package controller

import (
	"context"
	"slices"
	"time"

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

// applyDecision writes a lifecycle decision: the KruisePodReady holders first (so that the hook's operator
// sees the pod out of its endpoints before it sees the state it acts on), then the state label.
func (r *Reconciler) applyDecision(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod, d lifecycle.Decision) error {
	now := r.Clock.Now()
	if lifecycle.State(p) == d.State && !readinessChanges(p, d, now) {
		// The common case on every reconcile: spare the writers' deep copies of every pod.
		return nil
	}
	if err := r.patchPodStatus(ctx, cs, p, func(p *corev1.Pod) bool { return lifecycle.ApplyReadiness(p, d, now) }); err != nil {
		return err
	}
	if cs.Spec.Lifecycle == nil {
		return r.patchStateTested(ctx, cs, p, d.State)
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

// readinessChanges reports whether the decision changes the pod's KruisePodReady holders, trying it on a
// copy of the conditions only.
func readinessChanges(p *corev1.Pod, d lifecycle.Decision, now time.Time) bool {
	probe := &corev1.Pod{
		Spec:   corev1.PodSpec{ReadinessGates: p.Spec.ReadinessGates},
		Status: corev1.PodStatus{Conditions: slices.Clone(p.Status.Conditions)},
	}
	return lifecycle.ApplyReadiness(probe, d, now)
}
