package main

import (
	"testing"

	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// stepsRollout has five steps: 1 pod, 20% with 10% traffic, 50%, 60% with 0% traffic, 100%.
func stepsRollout(blueGreen bool, current int32) *rolloutsv1beta1.Rollout {
	ro := canaryRollout()
	steps := []rolloutsv1beta1.CanaryStep{step("1", "", -1), step("20%", "10%", -1), step("50%", "", -1), step("60%", "0%", -1), step("100%", "", -1)}
	ro.Spec.Strategy.Canary.Steps = steps
	if blueGreen {
		ro.Spec.Strategy = rolloutsv1beta1.RolloutStrategy{BlueGreen: &rolloutsv1beta1.BlueGreenStrategy{Steps: steps}}
	}
	return atStep(ro, current, rolloutsv1beta1.CanaryStepStatePaused)
}

func TestPlanStepJump(t *testing.T) {
	tests := []struct {
		name      string
		ro        *rolloutsv1beta1.Rollout
		step      int32
		wantStep  int32
		wantPatch string
		wantErr   string
	}{
		{name: "fast picks the quietest previous step", ro: stepsRollout(true, 5), wantStep: 4,
			wantPatch: `{"metadata":{"resourceVersion":"42"},"status":{"blueGreenStatus":{"nextStepIndex":4}}}`},
		{name: "steps with traffic are skipped", ro: stepsRollout(false, 3), wantStep: 1,
			wantPatch: `{"metadata":{"resourceVersion":"42"},"status":{"canaryStatus":{"nextStepIndex":1}}}`},
		{name: "given step", ro: stepsRollout(false, 5), step: 2, wantStep: 2,
			wantPatch: `{"metadata":{"resourceVersion":"42"},"status":{"canaryStatus":{"nextStepIndex":2}}}`},
		{name: "first step", ro: stepsRollout(true, 1), wantErr: "already at the first step, use kubectl-kruise rollout undo to cancel the release"},
		{name: "not a previous step", ro: stepsRollout(false, 3), step: 3, wantErr: "specified step 3 is not a previous step (current step is 3)"},
		{name: "no quiet step", ro: func() *rolloutsv1beta1.Rollout {
			ro := stepsRollout(false, 2)
			ro.Spec.Strategy.Canary.Steps[0].Traffic = ptr.To("5%")
			return ro
		}(), wantErr: "no previous step with no traffic found"},
		{name: "no release", ro: canaryRollout(), wantErr: "has no release in progress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jump, err := planStepJump(tt.ro, tt.step)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || jump.Step != tt.wantStep || string(jump.Patch) != tt.wantPatch || jump.Already {
				t.Errorf("jump %+v (%s), %v", jump, jump.Patch, err)
			}
		})
	}
	t.Run("already there", func(t *testing.T) {
		ro := stepsRollout(true, 5)
		ro.Status.BlueGreenStatus.NextStepIndex = 4
		if jump, err := planStepJump(ro, 0); err != nil || !jump.Already || jump.Patch != nil {
			t.Errorf("jump %+v, %v", jump, err)
		}
	})
}
