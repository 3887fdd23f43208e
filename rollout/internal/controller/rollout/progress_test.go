package rollout

import (
	"testing"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestCountersOnly(t *testing.T) {
	canary := func(state rolloutsv1beta1.CanaryStepState, replicas, ready int32) rolloutsv1beta1.RolloutStatus {
		return rolloutsv1beta1.RolloutStatus{Phase: rolloutsv1beta1.RolloutPhaseProgressing, CanaryStatus: &rolloutsv1beta1.CanaryStatus{
			CommonStatus:   rolloutsv1beta1.CommonStatus{CurrentStepIndex: 2, CurrentStepState: state},
			CanaryReplicas: replicas, CanaryReadyReplicas: ready,
		}}
	}
	blueGreen := func(replicas, ready int32) rolloutsv1beta1.RolloutStatus {
		return rolloutsv1beta1.RolloutStatus{BlueGreenStatus: &rolloutsv1beta1.BlueGreenStatus{
			UpdatedReplicas: replicas, UpdatedReadyReplicas: ready}}
	}
	upgrading := rolloutsv1beta1.CanaryStepStateUpgrade
	generation := func(st rolloutsv1beta1.RolloutStatus, gen int64, finalising rolloutsv1beta1.FinalisingStepType) rolloutsv1beta1.RolloutStatus {
		st.CanaryStatus.ObservedWorkloadGeneration, st.CanaryStatus.FinalisingStep = gen, finalising
		return st
	}
	paused, completed := rolloutsv1beta1.CanaryStepStatePaused, rolloutsv1beta1.CanaryStepStateCompleted
	healthy := func(st rolloutsv1beta1.RolloutStatus) rolloutsv1beta1.RolloutStatus {
		st.Phase = rolloutsv1beta1.RolloutPhaseHealthy
		return st
	}
	tests := []struct {
		name     string
		old, st  rolloutsv1beta1.RolloutStatus
		counters bool
	}{
		{"unchanged", canary(upgrading, 3, 1), canary(upgrading, 3, 1), false},
		{"more pods ready", canary(upgrading, 3, 1), canary(upgrading, 3, 2), true},
		{"more pods", canary(upgrading, 3, 1), canary(upgrading, 4, 1), true},
		{"a new step state with the counters", canary(upgrading, 3, 1), canary(rolloutsv1beta1.CanaryStepStatePaused, 3, 3), false},
		{"blue-green counters", blueGreen(2, 1), blueGreen(2, 2), true},
		{"a release starting", rolloutsv1beta1.RolloutStatus{}, canary(upgrading, 0, 0), false},
		{"the generation while a step upgrades", generation(canary(upgrading, 3, 1), 5, ""), generation(canary(upgrading, 3, 2), 6, ""), true},
		{"the generation while finalising", generation(canary(completed, 4, 4), 8, "ResumeWorkload"),
			generation(canary(completed, 4, 4), 9, "ResumeWorkload"), true},
		{"the generation at a paused step", generation(canary(paused, 3, 3), 5, ""), generation(canary(paused, 3, 3), 6, ""), false},
		{"the generation once finished", healthy(generation(canary(completed, 4, 4), 8, "")), healthy(generation(canary(completed, 4, 4), 9, "")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := countersOnly(tt.old, tt.st); got != tt.counters {
				t.Errorf("countersOnly = %v, want %v", got, tt.counters)
			}
		})
	}
}
