package plan

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// maxTransitions bounds the states one Advance call walks through; a step needs at most six.
const maxTransitions = 8

// StepWorld is what the Rollout controller observed for the release in progress.
type StepWorld struct {
	Now   time.Time
	Steps []rolloutsv1beta1.CanaryStep
	// BlueGreen releases never skip the pause of their last step.
	BlueGreen bool
	// ReadyStep is the 1-based step whose batch the BatchRelease reports ready (0: none).
	ReadyStep int32
	// NoTraffic is true when the Rollout routes no traffic; TrafficStep is the step whose routes are in
	// place (and whose grace period has passed) otherwise.
	NoTraffic   bool
	TrafficStep int32
	// Gates are the steps an analysis gates (absent: not gated).
	Gates map[int32]Gate
}

// StepResult is the state a release moves to and what the controller does next.
type StepResult struct {
	Status rolloutsv1beta1.CommonStatus
	// RequeueAfter is set when the release waits for time to pass (a pause duration).
	RequeueAfter time.Duration
	// AwaitingApproval is true while the step waits for a StepReady patch.
	AwaitingApproval bool
	// Events are the user-visible transitions made, in order.
	Events []string
}

// NewRelease is the sub-status of a release that starts at the first step.
func NewRelease(now time.Time, steps int) rolloutsv1beta1.CommonStatus {
	return rolloutsv1beta1.CommonStatus{
		CurrentStepIndex: 1,
		NextStepIndex:    nextIndex(1, steps),
		CurrentStepState: rolloutsv1beta1.CanaryStepStateInit,
		LastUpdateTime:   ptrTime(now),
	}
}

// CompletedRelease is the sub-status written at a Rollout's first Healthy, so that clients reading
// currentStepState see a finished release.
func CompletedRelease(now time.Time, steps int) rolloutsv1beta1.CommonStatus {
	return rolloutsv1beta1.CommonStatus{
		CurrentStepIndex: int32(steps), //nolint:gosec // steps <= 50 (CRD max)
		NextStepIndex:    -1,
		CurrentStepState: rolloutsv1beta1.CanaryStepStateCompleted,
		LastUpdateTime:   ptrTime(now),
	}
}

// Advance walks a release through as many step states as the world allows. It first honours a step jump
// written to nextStepIndex, then moves until it must wait for the batch, the routes, time or approval.
func Advance(st rolloutsv1beta1.CommonStatus, w StepWorld) StepResult {
	res := StepResult{Status: *st.DeepCopy()}
	applyJump(&res, w)
	for range maxTransitions {
		if !advanceOnce(&res, w) {
			break
		}
	}
	return res
}

// applyJump moves to the step named by nextStepIndex when it is not simply the following one; an index out
// of range is corrected. As upstream, the current step itself is a jump too: the step starts over, its pause
// included. A jump is taken before anything else, so it wins over a pause that expires in the same moment.
func applyJump(res *StepResult, w StepWorld) {
	st := &res.Status
	n := int32(len(w.Steps)) //nolint:gosec // steps <= 50 (CRD max)
	if st.CurrentStepState == rolloutsv1beta1.CanaryStepStateCompleted || n == 0 {
		return
	}
	want := nextIndex(st.CurrentStepIndex, len(w.Steps))
	if st.NextStepIndex == want {
		return
	}
	if st.NextStepIndex < 1 || st.NextStepIndex > n {
		st.NextStepIndex = want
		return
	}
	res.Events = append(res.Events, fmt.Sprintf("jump from step(%d) to step(%d)", st.CurrentStepIndex, st.NextStepIndex))
	st.CurrentStepIndex = st.NextStepIndex
	st.NextStepIndex = nextIndex(st.CurrentStepIndex, len(w.Steps))
	st.CurrentStepState = rolloutsv1beta1.CanaryStepStateInit
	st.LastUpdateTime = ptrTime(w.Now)
}

// advanceOnce makes one transition and reports whether it did.
func advanceOnce(res *StepResult, w StepWorld) bool {
	st := &res.Status
	switch st.CurrentStepState {
	case rolloutsv1beta1.CanaryStepStateInit:
		moveTo(st, rolloutsv1beta1.CanaryStepStateUpgrade, w.Now)
	case rolloutsv1beta1.CanaryStepStateUpgrade:
		if w.ReadyStep < st.CurrentStepIndex {
			return false
		}
		res.Events = append(res.Events, fmt.Sprintf("upgrade step(%d) canary pods with new versions done", st.CurrentStepIndex))
		moveTo(st, rolloutsv1beta1.CanaryStepStateTrafficRouting, w.Now)
	case rolloutsv1beta1.CanaryStepStateTrafficRouting:
		if !w.NoTraffic && w.TrafficStep != st.CurrentStepIndex {
			return false
		}
		moveTo(st, rolloutsv1beta1.CanaryStepStateMetricsAnalysis, w.Now)
	case rolloutsv1beta1.CanaryStepStateMetricsAnalysis:
		if w.Gates[st.CurrentStepIndex] == GateWaiting {
			return false
		}
		st.CurrentStepState = rolloutsv1beta1.CanaryStepStatePaused
	case rolloutsv1beta1.CanaryStepStatePaused:
		return leavePause(res, w)
	case rolloutsv1beta1.CanaryStepStateReady:
		if w.Gates[st.CurrentStepIndex] == GateMeasuring {
			// The pause is over: the binding terminates the step's run, which then passes (or fails).
			return false
		}
		finishStep(res, w)
	default:
		// Completed, or a value written by someone else: nothing to do here.
		return false
	}
	return true
}

// leavePause ends a pause by time, or reports the wait.
func leavePause(res *StepResult, w StepWorld) bool {
	st := &res.Status
	if w.Gates[st.CurrentStepIndex] == GateHold {
		// The analysis did not pass: a person decides, whatever the pause says.
		res.AwaitingApproval = true
		return false
	}
	step, ok := stepAt(w.Steps, st.CurrentStepIndex)
	measuring := w.Gates[st.CurrentStepIndex] == GateMeasuring
	if measuring && ok && pauseEndsAtOnce(w, st.CurrentStepIndex, step) {
		// A run measuring until the pause ends needs a pause to measure in: without one, a person ends it.
		res.AwaitingApproval = true
		return false
	}
	if !ok || skipsPause(w, st.CurrentStepIndex, step) {
		st.CurrentStepState = rolloutsv1beta1.CanaryStepStateReady
		return true
	}
	if step.Pause.Duration == nil {
		res.AwaitingApproval = true
		return false
	}
	remaining := pauseEnd(st, *step.Pause.Duration).Sub(w.Now)
	if remaining > 0 {
		res.RequeueAfter = remaining
		return false
	}
	st.CurrentStepState = rolloutsv1beta1.CanaryStepStateReady
	return true
}

// finishStep moves to the following step or completes the release.
func finishStep(res *StepResult, w StepWorld) {
	st := &res.Status
	if int(st.CurrentStepIndex) >= len(w.Steps) {
		st.CurrentStepState = rolloutsv1beta1.CanaryStepStateCompleted
		st.NextStepIndex = -1
		st.LastUpdateTime = ptrTime(w.Now)
		res.Events = append(res.Events, "all steps completed")
		return
	}
	st.CurrentStepIndex++
	st.NextStepIndex = nextIndex(st.CurrentStepIndex, len(w.Steps))
	moveTo(st, rolloutsv1beta1.CanaryStepStateInit, w.Now)
}

// skipsPause: the last canary step that releases every pod has nothing left to approve.
func skipsPause(w StepWorld, index int32, step rolloutsv1beta1.CanaryStep) bool {
	last := int(index) == len(w.Steps)
	return !w.BlueGreen && last && step.Replicas != nil && step.Replicas.String() == "100%"
}

// PauseEndsAtOnce: the step's pause would end as it begins (a duration of 0, or a last canary step that skips
// it), which leaves a run measuring until the pause ends no time to measure.
func PauseEndsAtOnce(steps []rolloutsv1beta1.CanaryStep, index int32, blueGreen bool) bool {
	step, ok := stepAt(steps, index)
	return ok && pauseEndsAtOnce(StepWorld{Steps: steps, BlueGreen: blueGreen}, index, step)
}

func pauseEndsAtOnce(w StepWorld, index int32, step rolloutsv1beta1.CanaryStep) bool {
	return skipsPause(w, index, step) || step.Pause.Duration != nil && *step.Pause.Duration == 0
}

func pauseEnd(st *rolloutsv1beta1.CommonStatus, seconds int32) time.Time {
	if st.LastUpdateTime == nil {
		return time.Time{}
	}
	return st.LastUpdateTime.Add(time.Duration(seconds) * time.Second)
}

func stepAt(steps []rolloutsv1beta1.CanaryStep, index int32) (rolloutsv1beta1.CanaryStep, bool) {
	if index < 1 || int(index) > len(steps) {
		return rolloutsv1beta1.CanaryStep{}, false
	}
	return steps[index-1], true
}

func moveTo(st *rolloutsv1beta1.CommonStatus, state rolloutsv1beta1.CanaryStepState, now time.Time) {
	st.CurrentStepState = state
	st.LastUpdateTime = ptrTime(now)
}

// nextIndex is the nextStepIndex that means "carry on": the following step, or -1 after the last.
func nextIndex(current int32, steps int) int32 {
	if int(current) >= steps {
		return -1
	}
	return current + 1
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.Truncate(time.Second))
	return &mt
}

// StepMessage is the Rollout's status message while a release is at a step.
func StepMessage(st rolloutsv1beta1.CommonStatus, steps []rolloutsv1beta1.CanaryStep) string {
	prefix := fmt.Sprintf("Rollout is in step(%d/%d)", st.CurrentStepIndex, len(steps))
	switch st.CurrentStepState {
	case rolloutsv1beta1.CanaryStepStateInit, rolloutsv1beta1.CanaryStepStateUpgrade:
		return prefix + ", and upgrade workload to new version"
	case rolloutsv1beta1.CanaryStepStateTrafficRouting:
		return prefix + ", and doing trafficRouting"
	case rolloutsv1beta1.CanaryStepStateMetricsAnalysis:
		return prefix + ", and doing metrics analysis"
	case rolloutsv1beta1.CanaryStepStatePaused:
		if step, ok := stepAt(steps, st.CurrentStepIndex); ok && step.Pause.Duration != nil {
			return prefix + fmt.Sprintf(", and wait duration(%d seconds) to enter the next step", *step.Pause.Duration)
		}
		return prefix + ", and you need manually confirm to enter the next step"
	case rolloutsv1beta1.CanaryStepStateReady:
		return prefix + ", and ready to enter the next step"
	case rolloutsv1beta1.CanaryStepStateCompleted:
		return "Rollout progressing has been completed"
	default:
		return prefix
	}
}
