package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// TestRenderGolden draws crafted statuses: the full view, the log line and the result line.
func TestRenderGolden(t *testing.T) {
	upgrading := atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStateUpgrade)
	upgrading.Status.Message = "Rollout is in step(2/3), and upgrade workload to new version"
	specPaused := atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStateUpgrade)
	specPaused.Spec.Strategy.Paused = true
	specPaused.Status.Message = "Rollout has been paused, you can resume it by kube-cli"
	traffic := atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStateTrafficRouting)
	traffic.Spec.Strategy.Canary.Steps[0].Traffic = ptr.To("10%")
	traffic.Spec.Strategy.Canary.Steps[1].Matches = []rolloutsv1beta1.HttpRouteMatch{{}, {}}
	traffic.Status.Message = "traffic routing failed: ingress apps/web not found"
	traffic = withCondition(traffic, conditionStalled, corev1.ConditionTrue, "TrafficRoutingFailed", "traffic routing failed: ingress apps/web not found")
	rolledBack := withCondition(atStep(canaryRollout(), 3, rolloutsv1beta1.CanaryStepStateCompleted),
		rolloutsv1beta1.RolloutConditionSucceeded, corev1.ConditionFalse, "Rollback", "Rollout progressing has been completed")
	completed := atStep(canaryRollout(), 3, rolloutsv1beta1.CanaryStepStateCompleted)
	completed.Status.Message = "workload deployment is completed"

	tests := []struct {
		golden  string
		rollout *rolloutsv1beta1.Rollout
		batch   *rolloutsv1beta1.BatchRelease
	}{
		{golden: "status/healthy-no-release.golden", rollout: canaryRollout()},
		{golden: "status/awaiting-approval.golden", rollout: atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStatePaused),
			batch: batchAt(0, rolloutsv1beta1.ReadyBatchState, 1, 1)},
		{golden: "status/upgrading.golden", rollout: upgrading, batch: batchAt(1, rolloutsv1beta1.UpgradingBatchState, 3, 2)},
		{golden: "status/timed-pause.golden", rollout: atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStatePaused),
			batch: batchAt(1, rolloutsv1beta1.ReadyBatchState, 5, 5)},
		{golden: "status/paused-by-spec.golden", rollout: specPaused, batch: batchAt(1, rolloutsv1beta1.UpgradingBatchState, 3, 3)},
		{golden: "status/traffic-failed.golden", rollout: traffic},
		{golden: "status/completed.golden", rollout: completed},
		{golden: "status/rolled-back.golden", rollout: rolledBack},
		{golden: "status/bluegreen-awaiting-approval.golden", rollout: atStep(blueGreenRollout(), 1, rolloutsv1beta1.CanaryStepStatePaused)},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			s := snapshot{Rollout: tt.rollout, Batch: tt.batch, Verdict: decide(tt.rollout), Now: testNow}
			got := renderStatus(s) + "---\n" + summaryLine(s) + "\n" + resultLine(s, "kubectl-kruise") + "\n"
			checkGolden(t, tt.golden, got)
		})
	}
}
