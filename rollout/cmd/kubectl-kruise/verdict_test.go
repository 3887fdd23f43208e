package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestDecideAndExitCode(t *testing.T) {
	paused := atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStateUpgrade)
	paused.Spec.Strategy.Paused = true
	healthyPaused := canaryRollout()
	healthyPaused.Spec.Strategy.Paused = true
	unobserved := atStep(canaryRollout(), 3, rolloutsv1beta1.CanaryStepStateCompleted)
	unobserved.Generation = 2
	disabled := canaryRollout()
	disabled.Status.Phase = rolloutsv1beta1.RolloutPhaseDisabled
	gone := canaryRollout()
	gone.Status.Phase, gone.Status.Message = rolloutsv1beta1.RolloutPhaseInitial, "Workload Not Found"
	lastStep := atStep(canaryRollout(), 3, rolloutsv1beta1.CanaryStepStatePaused)

	tests := []struct {
		name           string
		rollout        *rolloutsv1beta1.Rollout
		successOnPause bool
		want           outcome
		wantCode       int
		wantFinal      bool
	}{
		{name: "new Rollout, no release yet", rollout: canaryRollout(), want: outcomeDone, wantCode: exitOK, wantFinal: true},
		{name: "release completed", rollout: withCondition(atStep(canaryRollout(), 3, rolloutsv1beta1.CanaryStepStateCompleted),
			rolloutsv1beta1.RolloutConditionSucceeded, corev1.ConditionTrue, "Success", ""), want: outcomeDone, wantCode: exitOK, wantFinal: true},
		{name: "upgrading", rollout: atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStateUpgrade), want: outcomeProgressing, wantCode: exitNotDone},
		{name: "timed pause", rollout: atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStatePaused), want: outcomeProgressing, wantCode: exitNotDone},
		{name: "last 100% step never waits", rollout: lastStep, want: outcomeProgressing, wantCode: exitNotDone},
		{name: "awaiting approval", rollout: atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStatePaused), want: outcomeAwaitingApproval, wantCode: exitPaused, wantFinal: true},
		{name: "awaiting approval, success on pause", rollout: atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStatePaused), successOnPause: true,
			want: outcomeAwaitingApproval, wantCode: exitOK, wantFinal: true},
		{name: "awaiting approval per Reconciling", rollout: withCondition(atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStateMetricsAnalysis),
			conditionReconciling, corev1.ConditionTrue, "AwaitingApproval", ""), want: outcomeAwaitingApproval, wantCode: exitPaused, wantFinal: true},
		{name: "awaiting approval per an older manager's Stalled", rollout: withCondition(atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStateMetricsAnalysis),
			conditionStalled, corev1.ConditionTrue, "AwaitingApproval", ""), want: outcomeAwaitingApproval, wantCode: exitPaused, wantFinal: true},
		{name: "paused by spec", rollout: paused, want: outcomePaused, wantCode: exitPaused, wantFinal: true},
		{name: "paused by spec but done", rollout: healthyPaused, want: outcomeDone, wantCode: exitOK, wantFinal: true},
		{name: "rolled back", rollout: withCondition(atStep(canaryRollout(), 3, rolloutsv1beta1.CanaryStepStateCompleted),
			rolloutsv1beta1.RolloutConditionSucceeded, corev1.ConditionFalse, "Rollback", "Rollout progressing has been completed"),
			want: outcomeFailed, wantCode: exitFailed, wantFinal: true},
		{name: "traffic routing failed", rollout: withCondition(atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStateTrafficRouting),
			conditionStalled, corev1.ConditionTrue, "TrafficRoutingFailed", "ingress not found"), want: outcomeFailed, wantCode: exitFailed, wantFinal: true},
		{name: "batch release failed", rollout: withCondition(atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStateUpgrade),
			conditionStalled, corev1.ConditionTrue, "BatchReleaseFailed", "boom"), want: outcomeFailed, wantCode: exitFailed, wantFinal: true},
		{name: "stalled false is ignored", rollout: withCondition(atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStateUpgrade),
			conditionStalled, corev1.ConditionFalse, "BatchReleaseFailed", ""), want: outcomeProgressing, wantCode: exitNotDone},
		{name: "workload not found", rollout: gone, want: outcomeFailed, wantCode: exitFailed, wantFinal: true},
		{name: "disabled", rollout: disabled, want: outcomeDone, wantCode: exitOK, wantFinal: true},
		{name: "spec not yet observed", rollout: unobserved, want: outcomeProgressing, wantCode: exitNotDone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := decide(tt.rollout)
			if v.Outcome != tt.want {
				t.Fatalf("decide = %+v, want outcome %d", v, tt.want)
			}
			code, final := exitCodeFor(v, tt.successOnPause)
			if code != tt.wantCode || final != tt.wantFinal {
				t.Errorf("exitCodeFor = %d, %v; want %d, %v", code, final, tt.wantCode, tt.wantFinal)
			}
		})
	}
}
