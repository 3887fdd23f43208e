package main

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// stepJump is a move of a Rollout's release back to an earlier step: a status merge patch of
// nextStepIndex, which the controller follows. Already is set when nextStepIndex is the step already.
type stepJump struct {
	Patch   []byte
	Step    int32
	Already bool
}

// planStepJump moves a release back to step (0: the previous step that sends no traffic and has the
// most replicas, which `rollout undo --fast` picks), in canaryStatus or, for blue-green, blueGreenStatus.
func planStepJump(ro *rolloutsv1beta1.Rollout, step int32) (stepJump, error) {
	field, sub := "canaryStatus", ro.Status.GetSubStatus()
	if ro.Spec.Strategy.GetRollingStyle() == rolloutsv1beta1.BlueGreenRollingStyle {
		field, sub = "blueGreenStatus", subStatusOf(ro.Status.BlueGreenStatus)
	}
	if sub == nil {
		return stepJump{}, fmt.Errorf("has no release in progress")
	}
	steps := ro.Spec.Strategy.GetSteps()
	current := sub.CurrentStepIndex
	if err := checkStepJump(len(steps), current, step); err != nil {
		return stepJump{}, err
	}
	if step == 0 {
		found, ok := quietestPreviousStep(steps, current)
		if !ok {
			return stepJump{}, fmt.Errorf("no previous step with no traffic found")
		}
		step = found
	}
	if sub.NextStepIndex == step {
		return stepJump{Step: step, Already: true}, nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": ro.ResourceVersion},
		"status":   map[string]any{field: map[string]any{"nextStepIndex": step}},
	})
	if err != nil {
		return stepJump{}, fmt.Errorf("encoding the patch: %w", err)
	}
	return stepJump{Patch: patch, Step: step}, nil
}

func subStatusOf(bg *rolloutsv1beta1.BlueGreenStatus) *rolloutsv1beta1.CommonStatus {
	if bg == nil {
		return nil
	}
	return &bg.CommonStatus
}

func checkStepJump(steps int, current, step int32) error {
	switch {
	case int(current) > steps:
		return fmt.Errorf("has %d steps, but current step is too large %d", steps, current)
	case current <= 1:
		return fmt.Errorf("already at the first step, use kubectl-kruise rollout undo to cancel the release")
	case step < 0 || step >= current:
		return fmt.Errorf("specified step %d is not a previous step (current step is %d)", step, current)
	}
	return nil
}

// quietestPreviousStep finds, before the current step, the step with no traffic and the most replicas
// (compared as upstream does: numbers and percentages of 100 alike); the later one wins a tie.
func quietestPreviousStep(steps []rolloutsv1beta1.CanaryStep, current int32) (int32, bool) {
	best, most := int32(0), 0
	for i := current - 2; i >= 0; i-- {
		if sendsTraffic(steps[i]) {
			continue
		}
		replicas, _ := intstr.GetScaledValueFromIntOrPercent(steps[i].Replicas, 100, true)
		if replicas > most {
			best, most = i+1, replicas
		}
	}
	return best, best > 0
}

func sendsTraffic(s rolloutsv1beta1.CanaryStep) bool {
	if s.Traffic == nil {
		return false
	}
	v := intstr.FromString(*s.Traffic)
	percent, _ := intstr.GetScaledValueFromIntOrPercent(&v, 100, true)
	return percent != 0
}
