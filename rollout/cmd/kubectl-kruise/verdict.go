package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Exit codes. They are part of the CLI's contract (documented in `rollout status --help`).
const (
	exitOK = 0
	// exitError: bad arguments, an API error, a Rollout that does not exist or a refused action.
	exitError = 1
	// exitFailed: the release failed or was cancelled.
	exitFailed = 2
	// exitPaused: the release waits for a person, to approve a step or to resume a paused Rollout.
	exitPaused = 3
	// exitNotDone: still in progress when --timeout ran out, or with --watch=false.
	exitNotDone = 4
)

// outcome is where a Rollout stands, as far as a CI job cares.
type outcome int

const (
	outcomeProgressing outcome = iota
	outcomeDone
	outcomeAwaitingApproval
	outcomePaused
	outcomeFailed
)

// verdict is an outcome with the reason a person reads.
type verdict struct {
	Outcome outcome
	Reason  string
}

// Reasons that mean a person must act but nothing failed. Flotilla reports them on its Reconciling condition;
// older managers reported them on Stalled, which is still read so that one is judged right too.
const (
	stalledAwaitingApproval = "AwaitingApproval"
	stalledPaused           = "Paused"
	msgWorkloadNotFound     = "Workload Not Found"
	conditionStalled        = rolloutsv1beta1.RolloutConditionType("Stalled")
	conditionReconciling    = rolloutsv1beta1.RolloutConditionType("Reconciling")
)

// decide reads upstream's fields first (phase, step state, spec.strategy.paused, the Succeeded condition)
// and Flotilla's Stalled condition on top, so it judges Rollouts of either controller.
func decide(ro *rolloutsv1beta1.Rollout) verdict {
	st := &ro.Status
	if ro.Generation > 0 && st.ObservedGeneration > 0 && st.ObservedGeneration < ro.Generation {
		return verdict{outcomeProgressing, fmt.Sprintf("waiting for the controller to observe generation %d", ro.Generation)}
	}
	if v, failed := failure(st); failed {
		return v
	}
	if done(st) {
		return verdict{outcomeDone, doneReason(st)}
	}
	if ro.Spec.Strategy.Paused {
		return verdict{outcomePaused, "spec.strategy.paused is true"}
	}
	if step, ok := awaitingApproval(ro); ok {
		return verdict{outcomeAwaitingApproval, fmt.Sprintf("step %d/%d is paused until approved", step, len(ro.Spec.Strategy.GetSteps()))}
	}
	return verdict{outcomeProgressing, progressReason(ro)}
}

func progressReason(ro *rolloutsv1beta1.Rollout) string {
	sub := ro.Status.GetSubStatus()
	if sub == nil {
		return fmt.Sprintf("the Rollout is %s", phaseName(ro.Status.Phase))
	}
	return fmt.Sprintf("step %d/%d is %s", sub.CurrentStepIndex, len(ro.Spec.Strategy.GetSteps()), stateName(sub.CurrentStepState))
}

// failure: the release was cancelled or rolled back (Succeeded=False), the workload is gone, or the
// Rollout is stalled for a reason other than waiting for a person.
func failure(st *rolloutsv1beta1.RolloutStatus) (verdict, bool) {
	if c := condition(st.Conditions, rolloutsv1beta1.RolloutConditionSucceeded); c != nil && c.Status == corev1.ConditionFalse {
		return verdict{outcomeFailed, conditionText("Succeeded=False", c)}, true
	}
	if c := condition(st.Conditions, conditionStalled); c != nil && c.Status == corev1.ConditionTrue &&
		c.Reason != stalledAwaitingApproval && c.Reason != stalledPaused {
		return verdict{outcomeFailed, conditionText("Stalled", c)}, true
	}
	if st.Phase == rolloutsv1beta1.RolloutPhaseInitial && st.Message == msgWorkloadNotFound {
		return verdict{outcomeFailed, "the workload was not found"}, true
	}
	return verdict{}, false
}

// done: the release finished (Healthy with a Completed step state, or none yet), or the Rollout was
// disabled and no longer holds its workload.
func done(st *rolloutsv1beta1.RolloutStatus) bool {
	if st.Phase == rolloutsv1beta1.RolloutPhaseDisabled {
		return true
	}
	sub := st.GetSubStatus()
	return st.Phase == rolloutsv1beta1.RolloutPhaseHealthy &&
		(sub == nil || sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateCompleted)
}

func doneReason(st *rolloutsv1beta1.RolloutStatus) string {
	if st.Phase == rolloutsv1beta1.RolloutPhaseDisabled {
		return "the Rollout is disabled"
	}
	return "the release completed"
}

// awaitingApproval: the current step is paused without a duration (and is not the last canary step at
// 100%, which never waits), or the controller says so through its Reconciling condition.
func awaitingApproval(ro *rolloutsv1beta1.Rollout) (int32, bool) {
	sub := ro.Status.GetSubStatus()
	if sub == nil {
		return 0, false
	}
	for _, t := range []rolloutsv1beta1.RolloutConditionType{conditionReconciling, conditionStalled} {
		if c := condition(ro.Status.Conditions, t); c != nil && c.Status == corev1.ConditionTrue && c.Reason == stalledAwaitingApproval {
			return sub.CurrentStepIndex, true
		}
	}
	if sub.CurrentStepState != rolloutsv1beta1.CanaryStepStatePaused {
		return 0, false
	}
	step, ok := stepAt(ro.Spec.Strategy.GetSteps(), sub.CurrentStepIndex)
	return sub.CurrentStepIndex, ok && step.Pause.Duration == nil && !skipsPause(ro, sub.CurrentStepIndex, step)
}

// skipsPause mirrors the engine: the last canary step that releases every pod never pauses.
func skipsPause(ro *rolloutsv1beta1.Rollout, index int32, step rolloutsv1beta1.CanaryStep) bool {
	last := int(index) == len(ro.Spec.Strategy.GetSteps())
	return ro.Spec.Strategy.BlueGreen == nil && last && step.Replicas != nil && step.Replicas.String() == "100%"
}

// exitCodeFor says which code a verdict ends the command with, and whether it ends it at all.
func exitCodeFor(v verdict, successOnPause bool) (int, bool) {
	switch v.Outcome {
	case outcomeDone:
		return exitOK, true
	case outcomeFailed:
		return exitFailed, true
	case outcomeAwaitingApproval, outcomePaused:
		if successOnPause {
			return exitOK, true
		}
		return exitPaused, true
	default:
		return exitNotDone, false
	}
}

func stepAt(steps []rolloutsv1beta1.CanaryStep, index int32) (rolloutsv1beta1.CanaryStep, bool) {
	if index < 1 || int(index) > len(steps) {
		return rolloutsv1beta1.CanaryStep{}, false
	}
	return steps[index-1], true
}

func condition(conds []rolloutsv1beta1.RolloutCondition, t rolloutsv1beta1.RolloutConditionType) *rolloutsv1beta1.RolloutCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func conditionText(prefix string, c *rolloutsv1beta1.RolloutCondition) string {
	s := prefix
	if c.Reason != "" {
		s += " (" + c.Reason + ")"
	}
	if c.Message != "" {
		s += ": " + c.Message
	}
	return s
}
