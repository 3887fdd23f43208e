package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
)

// abortedAt is ro at step 2, which its analysis aborted, as the engine leaves it: StepPaused, condition Progressing
// with reason Aborted.
func abortedAt(ro *rolloutsv1beta1.Rollout) *rolloutsv1beta1.Rollout {
	return withCondition(atStep(ro, 2, rolloutsv1beta1.CanaryStepStatePaused), rolloutsv1beta1.RolloutConditionProgressing,
		"True", plan.ProgressingReasonAborted, "analysis of step 2 (AnalysisRun demo-rev2-0-2) ended Failed")
}

func TestPlanApproval(t *testing.T) {
	tests := []struct {
		name      string
		rollout   *rolloutsv1beta1.Rollout
		wantPatch string
		wantStep  int32
		wantErr   string
	}{
		{
			name:      "canary step paused",
			rollout:   atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStatePaused),
			wantPatch: `{"metadata":{"resourceVersion":"42"},"status":{"canaryStatus":{"currentStepState":"StepReady"}}}`,
			wantStep:  1,
		},
		{
			name:      "blue-green step paused",
			rollout:   atStep(blueGreenRollout(), 2, rolloutsv1beta1.CanaryStepStatePaused),
			wantPatch: `{"metadata":{"resourceVersion":"42"},"status":{"blueGreenStatus":{"currentStepState":"StepReady"}}}`,
			wantStep:  2,
		},
		{
			name:    "step still upgrading",
			rollout: atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStateUpgrade),
			wantErr: "does not allow to approve, because current canary state is not 'StepPaused' (step 2 is StepUpgrade)",
		},
		{
			name:    "already approved",
			rollout: atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStateReady),
			wantErr: "(step 1 is StepReady)",
		},
		{
			name:    "no release",
			rollout: canaryRollout(),
			wantErr: "no release in progress",
		},
		{
			name: "paused, progressing in rolling",
			rollout: withCondition(atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStatePaused), rolloutsv1beta1.RolloutConditionProgressing,
				"True", rolloutsv1beta1.ProgressingReasonInRolling, "Rollout is in Progressing"),
			wantPatch: `{"metadata":{"resourceVersion":"42"},"status":{"canaryStatus":{"currentStepState":"StepReady"}}}`,
			wantStep:  1,
		},
		{
			name:    "canary aborted by its analysis",
			rollout: abortedAt(canaryRollout()),
			wantErr: "does not allow to approve, because its analysis aborted the release: analysis of step 2 (AnalysisRun demo-rev2-0-2) ended Failed; " +
				"to release again: kubectl kruise rollout retry rollout/demo -n apps, or revert the revision",
		},
		{
			name:    "blue-green aborted by its analysis",
			rollout: abortedAt(blueGreenRollout()),
			wantErr: "because its analysis aborted the release",
		},
		{
			name: "aborted without a message",
			rollout: withCondition(atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStatePaused), rolloutsv1beta1.RolloutConditionProgressing,
				"True", plan.ProgressingReasonAborted, ""),
			wantErr: "does not allow to approve, because its analysis aborted the release; to release again: kubectl kruise rollout retry rollout/demo -n apps, or revert the revision",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planApproval(tt.rollout)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantPatch, string(got.Patch)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
			if got.Step != tt.wantStep || got.Revision != "rev2" {
				t.Errorf("step, revision = %d, %q; want %d, rev2", got.Step, got.Revision, tt.wantStep)
			}
		})
	}
}

func TestPlanPause(t *testing.T) {
	paused := canaryRollout()
	paused.Spec.Strategy.Paused = true
	tests := []struct {
		name      string
		rollout   *rolloutsv1beta1.Rollout
		pause     bool
		wantPatch string
		wantErr   string
	}{
		{name: "pause", rollout: canaryRollout(), pause: true, wantPatch: `{"spec":{"strategy":{"paused":true}}}`},
		{name: "resume", rollout: paused, pause: false, wantPatch: `{"spec":{"strategy":{"paused":false}}}`},
		{name: "already paused", rollout: paused, pause: true, wantErr: "is already paused"},
		{name: "not paused", rollout: canaryRollout(), pause: false, wantErr: "is not paused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planPause(tt.rollout, tt.pause)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.wantPatch {
				t.Errorf("planPause = %s, %v; want %s", got, err, tt.wantPatch)
			}
		})
	}
}

func TestBatchReadyAfter(t *testing.T) {
	approved := approval{Step: 1, Revision: "rev2"}
	newRelease := atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStateUpgrade)
	newRelease.Status.CanaryStatus.PodTemplateHash = "rev3"
	tests := []struct {
		name    string
		rollout *rolloutsv1beta1.Rollout
		want    bool
		wantErr string
	}{
		{name: "approval not yet picked up", rollout: atStep(canaryRollout(), 1, rolloutsv1beta1.CanaryStepStateReady)},
		{name: "next step starting", rollout: atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStateInit)},
		{name: "next step upgrading", rollout: atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStateUpgrade)},
		{name: "next step routing traffic", rollout: atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStateTrafficRouting), want: true},
		{name: "next step paused", rollout: atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStatePaused), want: true},
		{name: "completed", rollout: atStep(canaryRollout(), 3, rolloutsv1beta1.CanaryStepStateCompleted), want: true},
		{name: "replaced by a new release", rollout: newRelease, wantErr: "a new release (revision rev3) replaced the approved one (revision rev2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := batchReadyAfter(tt.rollout, approved)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("batchReadyAfter = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestPendingReleaseKeepsStatusWatching(t *testing.T) {
	done := verdict{outcomeDone, "completed"}
	ro := &rolloutsv1beta1.Rollout{}
	ro.Name = "demo"
	cases := []struct {
		name        string
		annotations map[string]string
		want        outcome
	}{
		{"no mark", nil, outcomeDone},
		{"this Rollout's mark", map[string]string{rolloutsv1beta1.InProgressingAnnotation: `{"rolloutName":"demo"}`}, outcomeProgressing},
		{"another Rollout's mark", map[string]string{rolloutsv1beta1.InProgressingAnnotation: `{"rolloutName":"other"}`}, outcomeDone},
		{"a malformed mark", map[string]string{rolloutsv1beta1.InProgressingAnnotation: `{`}, outcomeDone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := pendingRelease(t.Context(), &fakeAPI{workloadAnnotations: c.annotations}, ro, done)
			if got.Outcome != c.want {
				t.Errorf("outcome = %v, want %v (%s)", got.Outcome, c.want, got.Reason)
			}
		})
	}
}
