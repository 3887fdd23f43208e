package binding

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	rolloutplan "github.com/flotilla-dev/flotilla/rollout/internal/plan"
)

// Reasons of the events on a RolloutAnalysis.
const (
	ReasonRunCreated   = "RunCreated"
	ReasonRunSucceeded = "RunSucceeded"
	// ReasonRunFailed is also the reason of a run that erred or was inconclusive; the note says which.
	ReasonRunFailed = "RunFailed"
	ReasonRetried   = "Retried"
)

// Input is what the planner reads: the RolloutAnalysis, its Rollout (nil: not found), the older
// RolloutAnalysis naming the same Rollout if any (Winner), the runs the RolloutAnalysis owns, and the time.
type Input struct {
	Analysis *analysisv1alpha1.RolloutAnalysis
	Rollout  *rolloutsv1beta1.Rollout
	Winner   string
	Runs     []analysisv1alpha1.AnalysisRun
	Now      metav1.Time
}

// Plan is what the apply step does: create runs, terminate runs (by name), write the status, and record the
// events (once the status holding them is written).
type Plan struct {
	Status    analysisv1alpha1.RolloutAnalysisStatus
	Create    []*analysisv1alpha1.AnalysisRun
	Terminate []string
	Events    []Event
}

// Event is an event to record on the RolloutAnalysis. (RunCreated is the apply step's: only it knows whether
// the run was created or already existed.)
type Event struct {
	Type, Reason, Note string
}

// Compute plans one reconcile of a RolloutAnalysis. It is pure: everything it reads is in the input.
func Compute(in Input) Plan {
	ra := in.Analysis
	p := Plan{Status: *ra.Status.DeepCopy()}
	st := &p.Status
	st.ObservedGeneration = ra.Generation
	if in.Rollout == nil || in.Winner != "" {
		p.hold(in)
		return p
	}
	rel := releaseOf(in.Rollout)
	p.restart(ra, rel)
	p.recordDeadline(ra, in.Rollout, rel)
	runs := indexRuns(in.Runs)
	current := currentRuns(ra, st.CanaryRevision, st.Attempt)
	p.Create = toCreate(in, rel, st.Attempt, runs)
	p.Terminate = toTerminate(in.Runs, current, rel)
	st.Runs = observe(current, runs, p.Create, ra.Status.Runs)
	p.Events = append(p.Events, transitions(ra.Status.Runs, st.Runs, runs)...)
	bad := worst(st.Runs)
	setVerdict(st, bad, runs, in.Now)
	st.Message = message(ra, rel, st, bad, runs)
	p.reportNoPause(in, rel)
	return p
}

// ReasonStepPauseNeeded is the Ready reason, and the event reason, of a step whose run measures until the step's
// pause ends while the step has no pause to measure in: the release waits at the step for an approval instead.
const ReasonStepPauseNeeded = "StepPauseNeeded"

// reportNoPause says so when the current step's run measures until the step's pause ends and the step's pause
// ends at once (duration 0, or a last canary step of 100%): the engine then waits for an approval, which ends
// the measuring. Ready is False, and an event names the step and its templates once.
func (p *Plan) reportNoPause(in Input, rel release) {
	st := &p.Status
	i := slices.IndexFunc(st.Runs, func(r analysisv1alpha1.RolloutAnalysisRun) bool { return r.Step == rel.Step && r.Step > 0 })
	if i < 0 || !st.Runs[i].UntilTerminated || worst(st.Runs) != nil || !rel.InProgress || rel.State != rolloutsv1beta1.CanaryStepStatePaused ||
		!rolloutplan.PauseEndsAtOnce(in.Rollout.Spec.Strategy.GetSteps(), rel.Step, in.Rollout.Spec.Strategy.BlueGreen != nil) {
		return
	}
	msg := fmt.Sprintf("step %d: run %s measures until the step's pause ends (metrics without a count, templates %s), but step %d has no pause: "+
		"it waits for an approval instead; give the step a pause duration", rel.Step, st.Runs[i].Name, templateNames(in.Analysis, rel.Step), rel.Step)
	if c := meta.FindStatusCondition(st.Conditions, analysisv1alpha1.RolloutAnalysisReady); c == nil || c.Reason != ReasonStepPauseNeeded {
		p.Events = append(p.Events, Event{corev1.EventTypeWarning, ReasonStepPauseNeeded, msg})
	}
	st.Message = msg
	setCondition(st, analysisv1alpha1.RolloutAnalysisReady, metav1.ConditionFalse, ReasonStepPauseNeeded, msg, st.ObservedGeneration, in.Now)
}

// templateNames lists the templates of a gated step, for messages.
func templateNames(ra *analysisv1alpha1.RolloutAnalysis, step int32) string {
	var names []string
	for _, s := range ra.Spec.Steps {
		if s.Step == step {
			for _, t := range s.Templates {
				names = append(names, t.Name)
			}
		}
	}
	return strings.Join(names, ", ")
}

// hold is the plan of a RolloutAnalysis that may not act: its Rollout is missing, or an older RolloutAnalysis
// names it. Nothing is created; runs still measuring are stopped, as they measure a release nobody gates.
func (p *Plan) hold(in Input) {
	st, gen, name := &p.Status, in.Analysis.Generation, in.Analysis.Spec.RolloutRef.Name
	p.Terminate = toTerminate(in.Runs, nil, release{})
	reason, msg, stalled := analysisv1alpha1.ReasonRolloutNotFound, fmt.Sprintf("Rollout %s not found", name), metav1.ConditionFalse
	if in.Rollout != nil {
		reason, stalled = analysisv1alpha1.ReasonConflict, metav1.ConditionTrue
		msg = fmt.Sprintf("Rollout %s is analysed by RolloutAnalysis %s, which is older", name, in.Winner)
	}
	st.Message = msg
	setCondition(st, analysisv1alpha1.RolloutAnalysisReady, metav1.ConditionFalse, reason, msg, gen, in.Now)
	setCondition(st, analysisv1alpha1.RolloutAnalysisStalled, stalled, reason, msg, gen, in.Now)
}

// restart starts the analysis over for a new revision (attempt 0) or a retry (the next attempt): the status
// forgets the previous runs, which then are no longer current and are terminated if still running.
func (p *Plan) restart(ra *analysisv1alpha1.RolloutAnalysis, rel release) {
	st := &p.Status
	retry := ra.Annotations[analysisv1alpha1.RetryAnnotation]
	switch {
	case rel.Revision != "" && rel.Revision != st.CanaryRevision:
		st.CanaryRevision, st.Attempt, st.Runs, st.ProgressDeadlineExceeded = rel.Revision, 0, nil, ""
		// A retry asked before this release began is not one of this release.
		if retry != "" {
			st.ObservedRetry = retry
		}
	case retry == "" || retry == st.ObservedRetry:
	case st.CanaryRevision == "":
		st.ObservedRetry = retry // no release yet: nothing to retry
	default:
		st.Attempt++
		st.ObservedRetry, st.Runs, st.ProgressDeadlineExceeded = retry, nil, ""
		p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonRetried,
			fmt.Sprintf("Retrying the analysis of revision %s: attempt %d", st.CanaryRevision, st.Attempt)})
	}
}

// recordDeadline keeps, under abortOnProgressDeadline, the engine's stall of a step past its progress deadline,
// so that the engine aborts the release until a retry. An abort already under way is not a new stall.
func (p *Plan) recordDeadline(ra *analysisv1alpha1.RolloutAnalysis, ro *rolloutsv1beta1.Rollout, rel release) {
	st := &p.Status
	if !ra.Spec.AbortOnProgressDeadline || st.ProgressDeadlineExceeded != "" || !rel.InProgress || rel.Revision != st.CanaryRevision {
		return
	}
	stalled := rolloutplan.GetCondition(ro.Status.Conditions, rolloutplan.ConditionStalled)
	if stalled == nil || stalled.Status != corev1.ConditionTrue || stalled.Reason != analysisv1alpha1.ReasonProgressDeadlineExceeded {
		return
	}
	if progressing := rolloutplan.GetCondition(ro.Status.Conditions, rolloutsv1beta1.RolloutConditionProgressing); progressing != nil && progressing.Reason == rolloutplan.ProgressingReasonAborted {
		return
	}
	st.ProgressDeadlineExceeded = stalled.Message
	p.Events = append(p.Events, Event{corev1.EventTypeWarning, analysisv1alpha1.ReasonProgressDeadlineExceeded,
		"Aborting the release of revision " + rel.Revision + ": " + stalled.Message})
}

// currentRuns names the runs the attempt may have: one per gated step and the background's, by name.
func currentRuns(ra *analysisv1alpha1.RolloutAnalysis, rev string, attempt int32) map[string]int32 {
	out := map[string]int32{}
	if rev == "" {
		return out
	}
	for _, s := range ra.Spec.Steps {
		out[RunName(ra.Name, rev, attempt, s.Step)] = s.Step
	}
	if ra.Spec.Background != nil {
		out[RunName(ra.Name, rev, attempt, 0)] = 0
	}
	return out
}

// toCreate: the current step's run once the release waits in StepMetricsAnalysis at a gated step, and the
// background run once the release reached its starting step; each only if it does not exist yet.
func toCreate(in Input, rel release, attempt int32, runs map[string]*analysisv1alpha1.AnalysisRun) []*analysisv1alpha1.AnalysisRun {
	if !rel.InProgress {
		return nil
	}
	ra := in.Analysis
	var out []*analysisv1alpha1.AnalysisRun
	if i := slices.IndexFunc(ra.Spec.Steps, func(s analysisv1alpha1.StepAnalysis) bool { return s.Step == rel.Step }); i >= 0 &&
		rel.State == rolloutsv1beta1.CanaryStepStateMetricsAnalysis {
		s := ra.Spec.Steps[i]
		out = append(out, newRun(in, rel, attempt, s.Step, s.Templates, s.Args))
	}
	if bg := ra.Spec.Background; bg != nil && rel.Step >= ptr.Deref(bg.StartingStep, 1) {
		out = append(out, newRun(in, rel, attempt, 0, bg.Templates, bg.Args))
	}
	return slices.DeleteFunc(out, func(run *analysisv1alpha1.AnalysisRun) bool { return runs[run.Name] != nil })
}

// newRun is the run of a step (0: the background, which records the step it started at as its step-index).
func newRun(in Input, rel release, attempt, step int32, templates []analysisv1alpha1.TemplateRef,
	args []analysisv1alpha1.Argument) *analysisv1alpha1.AnalysisRun {
	ra := in.Analysis
	stepIndex := step
	if step == 0 {
		stepIndex = rel.Step
	}
	return &analysisv1alpha1.AnalysisRun{
		ObjectMeta: metav1.ObjectMeta{
			Name: RunName(ra.Name, rel.Revision, attempt, step), Namespace: ra.Namespace,
			Labels: map[string]string{
				analysisv1alpha1.RolloutAnalysisLabel: ra.Name,
				analysisv1alpha1.StepLabel:            fmt.Sprint(step),
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ra, analysisv1alpha1.GroupVersion.WithKind("RolloutAnalysis"))},
		},
		Spec: analysisv1alpha1.AnalysisRunSpec{
			Templates: slices.Clone(templates),
			Args:      mergeArgs(builtinArgs(in.Rollout, rel, stepIndex), ra.Spec.Args, args),
		},
	}
}

// toTerminate names the runs still measuring that no longer gate anything: those not of the current attempt,
// all of them once the release is no longer in progress, and a step's run measuring until its step's pause
// ends once it has (StepReady, by time or approval) or the release is past the step.
func toTerminate(runs []analysisv1alpha1.AnalysisRun, current map[string]int32, rel release) []string {
	var out []string
	for i := range runs {
		run := &runs[i]
		if run.Spec.Terminate || run.Status.Phase.Completed() || run.DeletionTimestamp != nil {
			continue
		}
		step, ok := current[run.Name]
		if !ok || !rel.InProgress || run.Status.UntilTerminated && stepEnded(rel, step) {
			out = append(out, run.Name)
		}
	}
	slices.Sort(out)
	return out
}

// stepEnded: the release is past the pause of step (not the background's).
func stepEnded(rel release, step int32) bool {
	return step > 0 && (rel.Step > step || rel.Step == step && rel.State == rolloutsv1beta1.CanaryStepStateReady)
}

// observe lists the current attempt's runs with their phases, sorted by step: those in the cache, those just
// created, and those the status already listed that the cache does not show yet.
func observe(current map[string]int32, runs map[string]*analysisv1alpha1.AnalysisRun, created []*analysisv1alpha1.AnalysisRun,
	listed []analysisv1alpha1.RolloutAnalysisRun) []analysisv1alpha1.RolloutAnalysisRun {
	var out []analysisv1alpha1.RolloutAnalysisRun
	for name, step := range current {
		entry := analysisv1alpha1.RolloutAnalysisRun{Name: name, Step: step}
		switch run := runs[name]; {
		case run != nil:
			entry.Phase, entry.UntilTerminated = run.Status.Phase, run.Status.UntilTerminated
		case slices.ContainsFunc(created, func(r *analysisv1alpha1.AnalysisRun) bool { return r.Name == name }):
		default:
			i := slices.IndexFunc(listed, func(r analysisv1alpha1.RolloutAnalysisRun) bool { return r.Name == name })
			if i < 0 {
				continue
			}
			entry.Phase = listed[i].Phase
		}
		out = append(out, entry)
	}
	slices.SortFunc(out, func(a, b analysisv1alpha1.RolloutAnalysisRun) int {
		if a.Step != b.Step {
			return int(a.Step - b.Step)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// transitions are the events of the runs that reached their final phase since the status was last written.
func transitions(before, after []analysisv1alpha1.RolloutAnalysisRun, runs map[string]*analysisv1alpha1.AnalysisRun) []Event {
	var out []Event
	for _, r := range after {
		if !r.Phase.Completed() {
			continue
		}
		if i := slices.IndexFunc(before, func(b analysisv1alpha1.RolloutAnalysisRun) bool { return b.Name == r.Name }); i >= 0 && before[i].Phase == r.Phase {
			continue
		}
		if r.Phase == analysisv1alpha1.AnalysisPhaseSuccessful {
			out = append(out, Event{corev1.EventTypeNormal, ReasonRunSucceeded, fmt.Sprintf("AnalysisRun %s of %s Successful", r.Name, stepName(r.Step))})
			continue
		}
		out = append(out, Event{corev1.EventTypeWarning, ReasonRunFailed,
			fmt.Sprintf("AnalysisRun %s of %s %s: %s", r.Name, stepName(r.Step), r.Phase, runMessage(runs, r.Name))})
	}
	return out
}

// worst is the run that stops the attempt: the first that failed or erred, else the first inconclusive; nil
// while none did.
func worst(runs []analysisv1alpha1.RolloutAnalysisRun) *analysisv1alpha1.RolloutAnalysisRun {
	var inconclusive *analysisv1alpha1.RolloutAnalysisRun
	for i := range runs {
		switch runs[i].Phase {
		case analysisv1alpha1.AnalysisPhaseFailed, analysisv1alpha1.AnalysisPhaseError:
			return &runs[i]
		case analysisv1alpha1.AnalysisPhaseInconclusive:
			if inconclusive == nil {
				inconclusive = &runs[i]
			}
		}
	}
	return inconclusive
}

// setVerdict sets Ready (no run went wrong) and Stalled (a run failed or erred).
func setVerdict(st *analysisv1alpha1.RolloutAnalysisStatus, bad *analysisv1alpha1.RolloutAnalysisRun,
	runs map[string]*analysisv1alpha1.AnalysisRun, now metav1.Time) {
	gen := st.ObservedGeneration
	if bad == nil && st.ProgressDeadlineExceeded != "" {
		msg := st.ProgressDeadlineExceeded
		setCondition(st, analysisv1alpha1.RolloutAnalysisReady, metav1.ConditionFalse, analysisv1alpha1.ReasonProgressDeadlineExceeded, msg, gen, now)
		setCondition(st, analysisv1alpha1.RolloutAnalysisStalled, metav1.ConditionTrue, analysisv1alpha1.ReasonProgressDeadlineExceeded, msg, gen, now)
		return
	}
	if bad == nil {
		msg := "no run of the current attempt failed"
		setCondition(st, analysisv1alpha1.RolloutAnalysisReady, metav1.ConditionTrue, analysisv1alpha1.ReasonPassing, msg, gen, now)
		setCondition(st, analysisv1alpha1.RolloutAnalysisStalled, metav1.ConditionFalse, analysisv1alpha1.ReasonPassing, msg, gen, now)
		return
	}
	msg := badMessage(bad, runs)
	setCondition(st, analysisv1alpha1.RolloutAnalysisReady, metav1.ConditionFalse, string(bad.Phase), msg, gen, now)
	if bad.Phase == analysisv1alpha1.AnalysisPhaseInconclusive {
		// An inconclusive run waits for a person: it holds the release without stopping it.
		setCondition(st, analysisv1alpha1.RolloutAnalysisStalled, metav1.ConditionFalse, string(bad.Phase), msg, gen, now)
		return
	}
	setCondition(st, analysisv1alpha1.RolloutAnalysisStalled, metav1.ConditionTrue, analysisv1alpha1.ReasonAnalysisFailed, msg, gen, now)
}

// message is the status's one line: what went wrong, else the gate the release is at or waits for, and the
// background run.
func message(ra *analysisv1alpha1.RolloutAnalysis, rel release, st *analysisv1alpha1.RolloutAnalysisStatus, bad *analysisv1alpha1.RolloutAnalysisRun,
	runs map[string]*analysisv1alpha1.AnalysisRun) string {
	switch {
	case bad != nil:
		return badMessage(bad, runs)
	case st.ProgressDeadlineExceeded != "":
		return "progress deadline exceeded: " + st.ProgressDeadlineExceeded
	case st.CanaryRevision == "":
		return fmt.Sprintf("no release of Rollout %s yet", ra.Spec.RolloutRef.Name)
	case !rel.InProgress || rel.Revision != st.CanaryRevision:
		return fmt.Sprintf("the release of revision %s is not in progress", st.CanaryRevision)
	}
	var parts []string
	var background string
	gated := false
	for _, r := range st.Runs {
		switch r.Step {
		case 0:
			background = fmt.Sprintf("background: run %s %s", r.Name, shownPhase(r.Phase))
		case rel.Step:
			gated = true
			parts = append(parts, fmt.Sprintf("step %d: run %s %s", r.Step, r.Name, shownPhase(r.Phase)))
		}
	}
	if !gated {
		if next := nextGate(ra.Spec.Steps, st.Runs, rel.Step); next > 0 {
			parts = append(parts, fmt.Sprintf("waiting for step %d", next))
		} else {
			parts = append(parts, "no gated step ahead")
		}
	}
	if background != "" {
		parts = append(parts, background)
	}
	return strings.Join(parts, "; ")
}

// nextGate is the first gated step from the current one on that has no run yet; 0 when none is left.
func nextGate(steps []analysisv1alpha1.StepAnalysis, listed []analysisv1alpha1.RolloutAnalysisRun, current int32) int32 {
	var next int32
	for _, s := range steps {
		ran := slices.ContainsFunc(listed, func(r analysisv1alpha1.RolloutAnalysisRun) bool { return r.Step == s.Step })
		if (s.Step > current || (s.Step == current && !ran)) && (next == 0 || s.Step < next) {
			next = s.Step
		}
	}
	return next
}

func badMessage(bad *analysisv1alpha1.RolloutAnalysisRun, runs map[string]*analysisv1alpha1.AnalysisRun) string {
	verb := map[analysisv1alpha1.AnalysisPhase]string{
		analysisv1alpha1.AnalysisPhaseFailed: "failed", analysisv1alpha1.AnalysisPhaseError: "erred",
		analysisv1alpha1.AnalysisPhaseInconclusive: "was inconclusive",
	}[bad.Phase]
	return fmt.Sprintf("run %s %s: %s", bad.Name, verb, runMessage(runs, bad.Name))
}

func runMessage(runs map[string]*analysisv1alpha1.AnalysisRun, name string) string {
	if run := runs[name]; run != nil && run.Status.Message != "" {
		return run.Status.Message
	}
	return "no message"
}

func shownPhase(p analysisv1alpha1.AnalysisPhase) analysisv1alpha1.AnalysisPhase {
	if p == "" {
		return analysisv1alpha1.AnalysisPhasePending
	}
	return p
}

func stepName(step int32) string {
	if step == 0 {
		return "the background"
	}
	return fmt.Sprintf("step %d", step)
}

func stepOf(run *analysisv1alpha1.AnalysisRun) int32 {
	var step int32
	_, _ = fmt.Sscan(run.Labels[analysisv1alpha1.StepLabel], &step)
	return step
}

func indexRuns(runs []analysisv1alpha1.AnalysisRun) map[string]*analysisv1alpha1.AnalysisRun {
	out := make(map[string]*analysisv1alpha1.AnalysisRun, len(runs))
	for i := range runs {
		out[runs[i].Name] = &runs[i]
	}
	return out
}

func setCondition(st *analysisv1alpha1.RolloutAnalysisStatus, typ string, status metav1.ConditionStatus, reason, msg string,
	gen int64, now metav1.Time) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: gen, LastTransitionTime: now})
}

// Winner is the RolloutAnalysis that acts for a Rollout among those naming it (not being deleted): the
// oldest, then the first by name. "" when there is none.
func Winner(candidates []analysisv1alpha1.RolloutAnalysis) string {
	var win *analysisv1alpha1.RolloutAnalysis
	for i := range candidates {
		c := &candidates[i]
		if c.DeletionTimestamp != nil {
			continue
		}
		if win == nil || analysisv1alpha1.CompareBinding(c, win) < 0 {
			win = c
		}
	}
	if win == nil {
		return ""
	}
	return win.Name
}
