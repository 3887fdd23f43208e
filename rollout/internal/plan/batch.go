// Package plan is the engine's pure planning: step and batch state machines, replica math, finalising
// orders and status conditions. Values in, values out: no client and no clock (callers pass now).
package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// ScaledReplicas resolves an int-or-percent against total, rounding percentages up and capping at total.
// A nil or unparsable value counts as total, so a malformed step never releases more than the whole workload.
func ScaledReplicas(v *intstr.IntOrString, total int32) int32 {
	if v == nil {
		return total
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(total), true)
	if err != nil || n < 0 {
		return total
	}
	if int32(n) > total { //nolint:gosec // n <= total fits in int32 after this check
		return total
	}
	return int32(n) //nolint:gosec // bounded by total above
}

// BatchTarget is the number of updated pods batch index (0-based) of a plan asks for.
func BatchTarget(p rolloutsv1beta1.ReleasePlan, batch int32, replicas int32) int32 {
	if len(p.Batches) == 0 {
		return replicas
	}
	if batch < 0 {
		batch = 0
	}
	if int(batch) >= len(p.Batches) {
		batch = int32(len(p.Batches) - 1) //nolint:gosec // len(Batches) <= 50 (CRD max)
	}
	return ScaledReplicas(&p.Batches[batch].CanaryReplicas, replicas)
}

// RollbackTarget is the number of updated pods a batch asks for in a rollback in batches: the noNeed pods
// already on the revision rolled back to count as updated, and the batch's share applies to the rest (the
// pods the release being rolled back had updated). Without noNeed it is BatchTarget.
func RollbackTarget(p rolloutsv1beta1.ReleasePlan, batch, replicas int32, noNeed *int32) int32 {
	if noNeed == nil {
		return BatchTarget(p, batch, replicas)
	}
	n := min(max(*noNeed, 0), replicas)
	return n + BatchTarget(p, batch, replicas-n)
}

// ReadyInput is what decides whether a batch is ready.
type ReadyInput struct {
	Desired              int32
	Updated              int32
	UpdatedReady         int32
	FailureThreshold     *intstr.IntOrString
	RolloutID            string
	LabelledForRolloutID int32
}

// BatchReady reports whether the pods of a batch are in place: enough updated pods, enough of them ready
// (failureThreshold may excuse some), at least one ready when any are asked for, and, with a rollout-id, the
// batch's pods labelled.
func BatchReady(in ReadyInput) bool {
	if in.Updated < in.Desired {
		return false
	}
	if in.UpdatedReady < readyNeeded(in) {
		return false
	}
	return in.RolloutID == "" || in.LabelledForRolloutID >= in.Desired
}

// readyNeeded is how many updated pods a batch needs Ready: all but those failureThreshold excuses, and at
// least one when any are asked for.
func readyNeeded(in ReadyInput) int32 {
	if in.Desired <= 0 {
		return 0
	}
	return max(in.Desired-toleratedFailures(in.FailureThreshold, in.Desired), 1)
}

// toleratedFailures is how many of desired pods failureThreshold excuses; none when it is unset or is not a
// number or a percentage (admission warns of such a value, as upstream accepts it).
func toleratedFailures(threshold *intstr.IntOrString, desired int32) int32 {
	if threshold == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(threshold, int(desired), true)
	if err != nil || n < 0 {
		return 0
	}
	return int32(min(n, int(desired))) //nolint:gosec // bounded by desired
}

// ReadyWanted is the number of updated ready pods below which BatchReady cannot hold whatever else changes,
// or 0 when there are that many already (the batch then waits for something else: pods, labels).
func ReadyWanted(in ReadyInput) int32 {
	if want := readyNeeded(in); in.UpdatedReady < want {
		return want
	}
	return 0
}

// ReleasePlanHash is the hash the BatchRelease reports as observedReleasePlanHash and the Rollout compares.
func ReleasePlanHash(p rolloutsv1beta1.ReleasePlan) string {
	return hashJSON(p)
}

// hashAtPartition is the hash p would have with partition instead of its own: two plans that differ at most
// in their partition hash alike at the same one.
func hashAtPartition(p rolloutsv1beta1.ReleasePlan, partition *int32) string {
	p.BatchPartition = partition
	return ReleasePlanHash(p)
}

// RolloutHash is the step-plan hash a Rollout carries in its rollouts.kruise.io/hash annotation and its status
// rolloutHash, made as upstream makes it: the canary or blue-green strategy without its failureThreshold and
// without the steps' pauses, so that editing a pause or the threshold does not count as a new plan.
func RolloutHash(s rolloutsv1beta1.RolloutStrategy) string {
	var v any
	switch {
	case s.BlueGreen != nil:
		bg := s.BlueGreen.DeepCopy()
		bg.FailureThreshold, bg.Steps = nil, withoutPauses(bg.Steps)
		v = bg
	case s.Canary != nil:
		c := s.Canary.DeepCopy()
		c.FailureThreshold, c.Steps = nil, withoutPauses(c.Steps)
		v = c
	default:
		return ""
	}
	return rand.SafeEncodeString(hashJSON(v))
}

// legacyStepsHash is the rolloutHash that earlier releases of Flotilla wrote (the steps alone); a release in
// flight across an upgrade is not a changed plan.
func legacyStepsHash(steps []rolloutsv1beta1.CanaryStep) string {
	return hashJSON(withoutPauses(steps))[:16]
}

func withoutPauses(steps []rolloutsv1beta1.CanaryStep) []rolloutsv1beta1.CanaryStep {
	stripped := make([]rolloutsv1beta1.CanaryStep, len(steps))
	for i, s := range steps {
		stripped[i] = *s.DeepCopy()
		stripped[i].Pause = rolloutsv1beta1.RolloutPause{}
	}
	return stripped
}

func hashJSON(v any) string {
	b, _ := json.Marshal(v) //nolint:errchkjson // API structs always marshal
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// fullRelease is a step without replicas: every pod.
var fullRelease = intstr.FromString("100%")
