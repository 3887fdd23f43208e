package plan

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// ProgressingReasonAborted is the Progressing reason of a release its analysis aborted: the traffic and the pods
// are back on the stable revision until a retry or a new revision. A Flotilla reason; upstream never writes it.
const ProgressingReasonAborted = "Aborted"

// Gate is where a step stands with the analysis that gates it.
type Gate int

const (
	// GateNone: the step is not gated.
	GateNone Gate = iota
	// GateWaiting: the step's run has not passed yet.
	GateWaiting
	// GatePassed: the step's run succeeded.
	GatePassed
	// GateHold: the step's run failed under onFailure Pause, or was inconclusive: the step waits at its
	// pause for a person, whatever its duration.
	GateHold
	// GateMeasuring: the step's run measures until it is terminated (metrics without a count): the step goes
	// on to its pause while it measures, and past the pause's end (StepReady, when the binding terminates
	// the run) only once the run succeeded.
	GateMeasuring
)

// RunObs is one AnalysisRun of the current release, as the RolloutAnalysis reports it.
type RunObs struct {
	Name  string
	Phase analysisv1alpha1.AnalysisPhase
	// UntilTerminated: the run measures until it is terminated.
	UntilTerminated bool
}

// AnalysisObs is what the Rollout's RolloutAnalysis says of the current release.
type AnalysisObs struct {
	// Name names the RolloutAnalysis, for messages.
	Name string
	// Gated are the steps the binding gates; Runs are the current release's runs by step (0: background).
	Gated []int32
	Runs  map[int32]RunObs
	// Background: the binding runs a background analysis.
	Background bool
	// Abort is onFailure Abort (Pause otherwise).
	Abort bool
	// ProgressDeadline bounds how long a step may wait for its pods (0: no bound); StuckPods say, for a
	// step past it, which of its pods are not ready and why.
	ProgressDeadline time.Duration
	StuckPods        []string
	// DeadlineAbort is the stall the binding recorded under abortOnProgressDeadline: it aborts the release.
	DeadlineAbort string
}

// failedRun is the first run of the release that failed or erred: the background's, then the steps' in order.
func (a *AnalysisObs) failedRun() (int32, RunObs, bool) {
	steps := make([]int32, 0, len(a.Runs))
	for step := range a.Runs {
		steps = append(steps, step)
	}
	slices.Sort(steps)
	for _, step := range steps {
		if r := a.Runs[step]; r.Phase == analysisv1alpha1.AnalysisPhaseFailed || r.Phase == analysisv1alpha1.AnalysisPhaseError {
			return step, r, true
		}
	}
	return 0, RunObs{}, false
}

// aborts reports why the analysis aborts the release (and the Stalled reason), if it does.
func (a *AnalysisObs) aborts() (string, string, bool) {
	if a == nil {
		return "", "", false
	}
	if a.DeadlineAbort != "" {
		return a.DeadlineAbort, analysisv1alpha1.ReasonProgressDeadlineExceeded, true
	}
	step, run, ok := a.failedRun()
	if !a.Abort || !ok {
		return "", "", false
	}
	return runFailure(step, run), analysisv1alpha1.ReasonAnalysisFailed, true
}

func runFailure(step int32, run RunObs) string {
	if step == 0 {
		return fmt.Sprintf("background analysis %s ended %s", run.Name, run.Phase)
	}
	return fmt.Sprintf("analysis of step %d (AnalysisRun %s) ended %s", step, run.Name, run.Phase)
}

// mayHold: an analysis may hold step when its batch is ready (a run gates it, or one runs in the background).
func (a *AnalysisObs) mayHold(step int32) bool {
	return a != nil && (a.Background || slices.Contains(a.Gated, step))
}

// Gates are the steps' gates for the step machine. A background run that failed (onFailure Pause) or was
// inconclusive holds every step not still measuring, so each waits for a person.
func (a *AnalysisObs) Gates(steps int) map[int32]Gate {
	if a == nil {
		return nil
	}
	gates := make(map[int32]Gate, steps)
	for _, step := range a.Gated {
		gates[step] = gateOf(a.Runs[step])
	}
	if bg, ok := a.Runs[0]; ok && gateOf(bg) == GateHold {
		for i := int32(1); i <= int32(steps); i++ { //nolint:gosec // steps <= 50 (CRD max)
			if gates[i] != GateWaiting && gates[i] != GateMeasuring {
				gates[i] = GateHold
			}
		}
	}
	return gates
}

func gateOf(run RunObs) Gate {
	switch run.Phase {
	case analysisv1alpha1.AnalysisPhaseSuccessful:
		return GatePassed
	case analysisv1alpha1.AnalysisPhaseFailed, analysisv1alpha1.AnalysisPhaseError, analysisv1alpha1.AnalysisPhaseInconclusive:
		return GateHold
	case analysisv1alpha1.AnalysisPhaseRunning:
		if run.UntilTerminated {
			return GateMeasuring
		}
	}
	return GateWaiting
}

// Aborted reports whether the release of the status was aborted by its analysis.
func Aborted(st rolloutsv1beta1.RolloutStatus) bool {
	c := GetCondition(st.Conditions, rolloutsv1beta1.RolloutConditionProgressing)
	return c != nil && c.Reason == ProgressingReasonAborted
}

// abortRelease holds a release its analysis failed: all traffic back to stable first, then no new-version
// pod at the current step, the workload's spec untouched. The step shows StepPaused (Argo CD: Suspended) and
// the Rollout Stalled (kstatus: Failed) until a retry or a new revision.
func abortRelease(d *RolloutDecision, w RolloutWorld, sub *rolloutsv1beta1.CommonStatus, why, reason string) {
	if !Aborted(d.Status) {
		d.Events = append(d.Events, "aborting the release: "+why)
		sub.LastUpdateTime = ptrTime(w.Now)
	}
	setProgressing(d, ProgressingReasonAborted, why, w.Now)
	sub.CurrentStepState = rolloutsv1beta1.CanaryStepStatePaused
	mirrorStep(&d.Status)
	msg := fmt.Sprintf("release aborted: %s; traffic goes back to the stable revision, then the step's new pods; to release again: %s, or push a new revision",
		why, w.command("retry"))
	d.Status.Message = msg
	d.Health = Health{Stalled: true, Reason: reason, Message: msg}
	d.Plan = abortPlan(d, w, *sub)
}

// abortPlan keeps the BatchRelease as it is until the traffic is back on stable, then asks for no new pod at
// the current step.
func abortPlan(d *RolloutDecision, w RolloutWorld, sub rolloutsv1beta1.CommonStatus) *rolloutsv1beta1.ReleasePlan {
	routed := !w.NoTraffic && !w.TrafficUnavailable
	if routed && !trafficSettled(d, w, 0, TrafficToStable) {
		if w.Batch == nil {
			return nil
		}
		return w.Batch.Plan.DeepCopy()
	}
	p := releasePlan(w, sub, false)
	p.Batches[*p.BatchPartition].CanaryReplicas = intstr.FromInt32(0)
	return p
}

// CarriesAbort: the plan asks for no new pod at its partition, as only an aborted release's does (a step of
// 0 replicas is refused at admission).
func CarriesAbort(p rolloutsv1beta1.ReleasePlan) bool {
	if p.BatchPartition == nil || int(*p.BatchPartition) >= len(p.Batches) {
		return false
	}
	r := p.Batches[*p.BatchPartition].CanaryReplicas
	return r.Type == intstr.Int && r.IntVal == 0
}

// resumeAborted starts an aborted release again from its first step, once its analysis no longer fails
// (a retry).
func resumeAborted(d *RolloutDecision, sub *rolloutsv1beta1.CommonStatus, steps int) {
	d.Events = append(d.Events, "no analysis stops the release any more (a retry, or its RolloutAnalysis is gone); it starts again from step(1)")
	sub.CurrentStepIndex = 1
	sub.NextStepIndex = nextIndex(1, steps)
	sub.CurrentStepState = rolloutsv1beta1.CanaryStepStateInit
}

// analysisHealth reports a step held by its analysis: a failure (onFailure Pause) is Stalled, an inconclusive
// run waits for a person (InProgress); both continue with an approval.
func analysisHealth(d *RolloutDecision, w RolloutWorld, sub rolloutsv1beta1.CommonStatus) {
	a := w.Analysis
	if a == nil || sub.CurrentStepState != rolloutsv1beta1.CanaryStepStatePaused {
		return
	}
	for _, step := range []int32{sub.CurrentStepIndex, 0} {
		run, ok := a.Runs[step]
		if !ok || gateOf(run) != GateHold {
			continue
		}
		msg := fmt.Sprintf("%s; the release waits at step(%d): to continue anyway: %s; to measure again: %s",
			runFailure(step, run), sub.CurrentStepIndex, w.command("approve"), w.command("retry"))
		d.Status.Message = msg
		if run.Phase == analysisv1alpha1.AnalysisPhaseInconclusive {
			// Neither passed nor failed: a person decides, as at an approval (kstatus InProgress).
			d.Health = Health{Reconciling: true, Reason: ReasonAnalysisInconclusive, Message: msg}
			return
		}
		d.Health = Health{Stalled: true, Reason: analysisv1alpha1.ReasonAnalysisFailed, Message: msg}
		return
	}
}

// ReasonAnalysisInconclusive: a step waits for a person because its analysis was inconclusive.
const ReasonAnalysisInconclusive = "AnalysisInconclusive"

// ProgressOverdue reports whether the step of sub has waited for its pods longer than the deadline.
func ProgressOverdue(sub *rolloutsv1beta1.CommonStatus, deadline time.Duration, now time.Time) bool {
	return deadlineLeft(sub, deadline, now) < 0
}

// deadlineLeft is how long the current step may still wait for its pods; no bound, or a step not waiting
// for its pods, leaves all the time there is.
func deadlineLeft(sub *rolloutsv1beta1.CommonStatus, deadline time.Duration, now time.Time) time.Duration {
	if sub == nil || deadline <= 0 || sub.LastUpdateTime == nil || sub.CurrentStepState != rolloutsv1beta1.CanaryStepStateUpgrade {
		return math.MaxInt64
	}
	return sub.LastUpdateTime.Add(deadline).Sub(now)
}

// checkProgressDeadline stalls a step whose pods are not ready in time, naming them; it recovers by itself
// when they become ready.
func checkProgressDeadline(d *RolloutDecision, w RolloutWorld, sub *rolloutsv1beta1.CommonStatus) {
	a := w.Analysis
	if a == nil {
		return
	}
	left := deadlineLeft(sub, a.ProgressDeadline, w.Now)
	if left == math.MaxInt64 {
		return
	}
	if left >= 0 {
		d.RequeueAfter = Soonest(d.RequeueAfter, left+time.Second)
		return
	}
	msg := fmt.Sprintf("the pods of step(%d) did not become ready within progressDeadlineSeconds (%s)", sub.CurrentStepIndex, a.ProgressDeadline)
	if len(a.StuckPods) > 0 {
		msg += ": " + strings.Join(a.StuckPods, "; ")
	}
	d.Status.Message = msg
	d.Health = Health{Stalled: true, Reason: analysisv1alpha1.ReasonProgressDeadlineExceeded, Message: msg}
}

// analysisMessage adds the run a step waits for to the step's message.
func analysisMessage(w RolloutWorld, sub rolloutsv1beta1.CommonStatus, msg string) string {
	if w.Analysis == nil {
		return msg
	}
	run, ok := w.Analysis.Runs[sub.CurrentStepIndex]
	if ok && gateOf(run) == GateMeasuring && (sub.CurrentStepState == rolloutsv1beta1.CanaryStepStatePaused || sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateReady) {
		return msg + fmt.Sprintf(" (AnalysisRun %s measures until the step's pause ends)", run.Name)
	}
	if sub.CurrentStepState != rolloutsv1beta1.CanaryStepStateMetricsAnalysis {
		return msg
	}
	if !ok {
		return msg + fmt.Sprintf(" (waiting for the run of RolloutAnalysis %s)", w.Analysis.Name)
	}
	phase := run.Phase
	if phase == "" {
		phase = analysisv1alpha1.AnalysisPhasePending
	}
	return msg + fmt.Sprintf(" (AnalysisRun %s: %s)", run.Name, phase)
}
