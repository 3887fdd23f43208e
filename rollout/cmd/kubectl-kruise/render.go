package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
)

// snapshot is what one look at a Rollout found. Batch is nil when no BatchRelease exists.
type snapshot struct {
	Rollout *rolloutsv1beta1.Rollout
	Batch   *rolloutsv1beta1.BatchRelease
	// Analysis is the RolloutAnalysis binding the Rollout, if any.
	Analysis *analysisv1alpha1.RolloutAnalysis
	Verdict  verdict
	Now      time.Time
}

// renderStatus draws the whole status: a header, one row per step, the current batch and the message.
func renderStatus(s snapshot) string {
	var b strings.Builder
	ro := s.Rollout
	fmt.Fprintf(&b, "Rollout %s/%s: %s, %s\n", ro.Namespace, ro.Name, phaseName(ro.Status.Phase), strategyName(ro))
	writeSteps(&b, s)
	if line := progressLine(s); line != "" {
		fmt.Fprintf(&b, "%s\n", line)
	}
	if line := analysisLine(s.Analysis); line != "" {
		fmt.Fprintf(&b, "%s\n", line)
	}
	if ro.Status.Message != "" {
		fmt.Fprintf(&b, "Message: %s\n", ro.Status.Message)
	}
	return b.String()
}

// analysisLine names the binding's runs of the release and their phases, then what the binding says.
func analysisLine(ra *analysisv1alpha1.RolloutAnalysis) string {
	if ra == nil {
		return ""
	}
	runs := make([]string, 0, len(ra.Status.Runs))
	for _, run := range ra.Status.Runs {
		what := fmt.Sprintf("step %d", run.Step)
		if run.Step == 0 {
			what = "background"
		}
		runs = append(runs, fmt.Sprintf("%s %s %s", what, run.Name, orPending(run.Phase)))
	}
	line := "Analysis: " + ra.Name
	if len(runs) > 0 {
		line += " (" + strings.Join(runs, ", ") + ")"
	}
	if ra.Status.Message != "" {
		line += ": " + ra.Status.Message
	}
	return line
}

func orPending(p analysisv1alpha1.AnalysisPhase) analysisv1alpha1.AnalysisPhase {
	if p == "" {
		return analysisv1alpha1.AnalysisPhasePending
	}
	return p
}

// summaryLine is one line for logs: the step, its state and the batch's progress.
func summaryLine(s snapshot) string {
	ro := s.Rollout
	parts := []string{phaseName(ro.Status.Phase)}
	if sub := ro.Status.GetSubStatus(); sub != nil {
		parts = append(parts, fmt.Sprintf("step %d/%d %s", sub.CurrentStepIndex, len(ro.Spec.Strategy.GetSteps()), stepStateText(s, sub)))
	}
	if line := progressLine(s); line != "" {
		parts = append(parts, line)
	}
	return strings.Join(parts, ", ")
}

// resultLine is the last line a command prints: what the verdict means and what to do about it.
func resultLine(s snapshot, command string) string {
	ro := s.Rollout
	switch s.Verdict.Outcome {
	case outcomeDone:
		return "Done: " + s.Verdict.Reason
	case outcomeFailed:
		return "Failed: " + s.Verdict.Reason
	case outcomeAwaitingApproval:
		return fmt.Sprintf("Waiting for approval: %s; approve it with: %s rollout approve rollout/%s -n %s", s.Verdict.Reason, command, ro.Name, ro.Namespace)
	case outcomePaused:
		return fmt.Sprintf("Paused: %s; resume it with: %s rollout resume rollout/%s -n %s", s.Verdict.Reason, command, ro.Name, ro.Namespace)
	default:
		return "In progress: " + s.Verdict.Reason
	}
}

func writeSteps(b *strings.Builder, s snapshot) {
	steps := s.Rollout.Spec.Strategy.GetSteps()
	if len(steps) == 0 {
		return
	}
	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  STEP\tREPLICAS\tTRAFFIC\tPAUSE\tSTATE")
	for i, step := range steps {
		idx := int32(i + 1) //nolint:gosec // at most 50 steps (CRD max)
		marker, state := stepRowState(s, idx)
		fmt.Fprintf(w, "%s %d\t%s\t%s\t%s\t%s\n", marker, idx, replicasText(step), trafficText(step), pauseText(s.Rollout, idx, step), state)
	}
	_ = w.Flush() // a strings.Builder never fails a write
}

// stepRowState is the marker (">" on the current step) and the state shown for step idx.
func stepRowState(s snapshot, idx int32) (string, string) {
	sub := s.Rollout.Status.GetSubStatus()
	switch {
	case sub == nil:
		return " ", "-"
	case sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateCompleted || idx < sub.CurrentStepIndex:
		return " ", "done"
	case idx == sub.CurrentStepIndex:
		return ">", stepStateText(s, sub)
	default:
		return " ", "-"
	}
}

// stepStateText names the current step's state, with how a pause ends.
func stepStateText(s snapshot, sub *rolloutsv1beta1.CommonStatus) string {
	state := stateName(sub.CurrentStepState)
	if sub.CurrentStepState != rolloutsv1beta1.CanaryStepStatePaused {
		return state
	}
	step, ok := stepAt(s.Rollout.Spec.Strategy.GetSteps(), sub.CurrentStepIndex)
	switch {
	case !ok:
		return state
	case step.Pause.Duration == nil:
		return state + " (waiting for approval)"
	case sub.LastUpdateTime == nil:
		return state
	default:
		left := sub.LastUpdateTime.Add(time.Duration(*step.Pause.Duration) * time.Second).Sub(s.Now)
		return fmt.Sprintf("%s (%s left)", state, max(left, 0).Truncate(time.Second))
	}
}

func replicasText(step rolloutsv1beta1.CanaryStep) string {
	if step.Replicas == nil {
		return "-"
	}
	return step.Replicas.String()
}

func trafficText(step rolloutsv1beta1.CanaryStep) string {
	var parts []string
	if step.Traffic != nil {
		parts = append(parts, *step.Traffic)
	}
	if n := len(step.Matches); n > 0 {
		parts = append(parts, fmt.Sprintf("%d match(es)", n))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " + ")
}

func pauseText(ro *rolloutsv1beta1.Rollout, idx int32, step rolloutsv1beta1.CanaryStep) string {
	switch {
	case skipsPause(ro, idx, step):
		return "-"
	case step.Pause.Duration == nil:
		return "approval"
	default:
		return fmt.Sprintf("%ds", *step.Pause.Duration)
	}
}

// progressLine reports the current batch from the BatchRelease, or the pod counts the Rollout keeps
// when there is none.
func progressLine(s snapshot) string {
	if br := s.Batch; br != nil && br.Status.Phase != rolloutsv1beta1.RolloutPhaseCompleted {
		return batchLine(br)
	}
	sub := s.Rollout.Status.GetSubStatus()
	if sub == nil || s.Rollout.Status.Phase != rolloutsv1beta1.RolloutPhaseProgressing {
		return ""
	}
	updated, ready := podCounts(&s.Rollout.Status)
	return fmt.Sprintf("Pods: %d updated, %d ready", updated, ready)
}

func batchLine(br *rolloutsv1beta1.BatchRelease) string {
	cs := br.Status.CanaryStatus
	batches := len(br.Spec.ReleasePlan.Batches)
	line := fmt.Sprintf("Batch %d/%d", cs.CurrentBatch+1, batches)
	if cs.CurrentBatchState != "" {
		line += " " + string(cs.CurrentBatchState)
	}
	total := br.Status.ObservedWorkloadReplicas
	if total <= 0 || batches == 0 {
		return fmt.Sprintf("%s: %d updated, %d ready", line, cs.UpdatedReplicas, cs.UpdatedReadyReplicas)
	}
	desired := plan.RollbackTarget(br.Spec.ReleasePlan, cs.CurrentBatch, total, cs.NoNeedUpdateReplicas)
	return fmt.Sprintf("%s: %d/%d updated, %d/%d ready (of %d replicas)",
		line, cs.UpdatedReplicas, desired, cs.UpdatedReadyReplicas, desired, total)
}

func podCounts(st *rolloutsv1beta1.RolloutStatus) (int32, int32) {
	if c := st.CanaryStatus; c != nil {
		return c.CanaryReplicas, c.CanaryReadyReplicas
	}
	if bg := st.BlueGreenStatus; bg != nil {
		return bg.UpdatedReplicas, bg.UpdatedReadyReplicas
	}
	return 0, 0
}

func phaseName(p rolloutsv1beta1.RolloutPhase) string {
	if p == "" {
		return "Initial"
	}
	return string(p)
}

func strategyName(ro *rolloutsv1beta1.Rollout) string {
	steps := fmt.Sprintf("%d steps", len(ro.Spec.Strategy.GetSteps()))
	switch ro.Spec.Strategy.GetRollingStyle() {
	case rolloutsv1beta1.BlueGreenRollingStyle:
		return "blue-green, " + steps
	case rolloutsv1beta1.CanaryRollingStyle:
		return "canary with an extra workload, " + steps
	case rolloutsv1beta1.PartitionRollingStyle:
		return "canary (partition style), " + steps
	default:
		return "no strategy"
	}
}
