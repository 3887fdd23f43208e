package main

import (
	"encoding/json"
	"fmt"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
)

// approval is what approving a Rollout does: the status merge patch, and the step it approves.
type approval struct {
	Patch []byte
	// Step is the 1-based step being approved; Revision is the release's podTemplateHash, so a wait can
	// tell when another release replaced this one.
	Step     int32
	Revision string
}

// planApproval decides whether ro can be approved. Like upstream, only a step in StepPaused can; the
// patch moves it to StepReady in canaryStatus, or in blueGreenStatus for a blue-green release. The
// resourceVersion makes the patch fail rather than approve a step that moved on since it was read. A release
// its analysis aborted is refused whatever its step shows: the engine holds the step at StepPaused while the
// abort lasts, so an approval would be undone at once; a retry or a new revision releases it again.
func planApproval(ro *rolloutsv1beta1.Rollout) (approval, error) {
	if plan.Aborted(ro.Status) {
		return approval{}, abortedError(ro)
	}
	field, sub := "canaryStatus", ro.Status.GetSubStatus()
	if ro.Status.CanaryStatus == nil && ro.Status.BlueGreenStatus != nil {
		field = "blueGreenStatus"
	}
	if sub == nil {
		return approval{}, fmt.Errorf("does not allow to approve, because the Rollout has no release in progress (no canaryStatus or blueGreenStatus)")
	}
	if sub.CurrentStepState != rolloutsv1beta1.CanaryStepStatePaused {
		return approval{}, fmt.Errorf("does not allow to approve, because current canary state is not 'StepPaused' (step %d is %s)",
			sub.CurrentStepIndex, stateName(sub.CurrentStepState))
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": ro.ResourceVersion},
		"status":   map[string]any{field: map[string]any{"currentStepState": rolloutsv1beta1.CanaryStepStateReady}},
	})
	if err != nil {
		return approval{}, fmt.Errorf("encoding the approval: %w", err)
	}
	return approval{Patch: patch, Step: sub.CurrentStepIndex, Revision: sub.PodTemplateHash}, nil
}

// abortedError refuses to approve an aborted release, with the condition's reason and the ways out.
func abortedError(ro *rolloutsv1beta1.Rollout) error {
	why := ""
	if c := plan.GetCondition(ro.Status.Conditions, rolloutsv1beta1.RolloutConditionProgressing); c != nil && c.Message != "" {
		why = ": " + c.Message
	}
	retry := "kubectl kruise rollout retry rollout/" + ro.Name
	if ro.Namespace != "" {
		retry += " -n " + ro.Namespace
	}
	return fmt.Errorf("does not allow to approve, because its analysis aborted the release%s; to release again: %s, or revert the revision",
		why, retry)
}

// planPause returns the spec merge patch that sets spec.strategy.paused, refusing a no-op like upstream.
func planPause(ro *rolloutsv1beta1.Rollout, paused bool) ([]byte, error) {
	if ro.Spec.Strategy.Paused == paused {
		if paused {
			return nil, fmt.Errorf("is already paused")
		}
		return nil, fmt.Errorf("is not paused")
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"strategy": map[string]any{"paused": paused}}})
	if err != nil {
		return nil, fmt.Errorf("encoding the patch: %w", err)
	}
	return patch, nil
}

// batchReadyAfter reports whether the step after an approved one has its batch in place: the Rollout
// went past StepUpgrade of a later step, or finished. A different revision means a new release took over.
func batchReadyAfter(ro *rolloutsv1beta1.Rollout, a approval) (bool, error) {
	sub := ro.Status.GetSubStatus()
	if sub == nil {
		return false, nil
	}
	if a.Revision != "" && sub.PodTemplateHash != a.Revision {
		return false, fmt.Errorf("a new release (revision %s) replaced the approved one (revision %s)", sub.PodTemplateHash, a.Revision)
	}
	if sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateCompleted || ro.Status.Phase == rolloutsv1beta1.RolloutPhaseHealthy {
		return true, nil
	}
	return sub.CurrentStepIndex > a.Step && pastUpgrade(sub.CurrentStepState), nil
}

func pastUpgrade(s rolloutsv1beta1.CanaryStepState) bool {
	switch s {
	case rolloutsv1beta1.CanaryStepStateTrafficRouting, rolloutsv1beta1.CanaryStepStateMetricsAnalysis,
		rolloutsv1beta1.CanaryStepStatePaused, rolloutsv1beta1.CanaryStepStateReady:
		return true
	default:
		return false
	}
}

func stateName(s rolloutsv1beta1.CanaryStepState) string {
	if s == "" {
		return "not started"
	}
	return string(s)
}
