package plan

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

// Start marks a run started at now, with a Pending result for each metric that has none yet.
func Start(status *analysisv1alpha1.AnalysisRunStatus, metrics []analysisv1alpha1.Metric, now time.Time) {
	if status.StartedAt == nil {
		status.StartedAt = &metav1.Time{Time: now}
	}
	if status.Phase == "" || status.Phase == analysisv1alpha1.AnalysisPhasePending {
		status.Phase = analysisv1alpha1.AnalysisPhaseRunning
	}
	for _, m := range metrics {
		ensureResult(status, m.Name)
	}
}

// Terminate ends a run's metrics in progress: each gets the verdict of what it measured (Assess then ends the
// run and drops the measurements in flight).
func Terminate(status *analysisv1alpha1.AnalysisRunStatus, metrics []analysisv1alpha1.Metric) {
	for i := range metrics {
		res := FindResult(status, metrics[i].Name)
		if res == nil || res.Phase.Completed() {
			continue
		}
		res.Phase = analysisv1alpha1.AnalysisPhaseSuccessful
		res.Message = fmt.Sprintf("terminated after %d measurements: %d successful, %d failed (and %d inconclusive)",
			res.Count, res.Successful, res.Failed, res.Inconclusive)
	}
}

// severity orders the final phases that end a run early: the worst metric gives the run its phase.
var severity = map[analysisv1alpha1.AnalysisPhase]int{
	analysisv1alpha1.AnalysisPhaseInconclusive: 1,
	analysisv1alpha1.AnalysisPhaseError:        2,
	analysisv1alpha1.AnalysisPhaseFailed:       3,
}

// Assess sets a run's phase and message from its metrics: as soon as one metric failed, erred or was
// inconclusive, the run ends with the worst of those phases; once every metric succeeded, Successful; Running
// before. A run that reaches its final phase gets completedAt, and its other metrics stop: their measurements
// in flight are dropped and returned by metric name, for their providers to stop them.
func Assess(status *analysisv1alpha1.AnalysisRunStatus, metrics []analysisv1alpha1.Metric, terminated bool,
	now time.Time) map[string]analysisv1alpha1.Measurement {
	if status.Phase.Completed() {
		return nil
	}
	worst, done := (*analysisv1alpha1.MetricResult)(nil), 0
	for i := range metrics {
		res := FindResult(status, metrics[i].Name)
		switch {
		case res == nil:
		case severity[res.Phase] > 0 && (worst == nil || severity[res.Phase] > severity[worst.Phase]):
			worst = res
		case res.Phase == analysisv1alpha1.AnalysisPhaseSuccessful:
			done++
		}
	}
	switch {
	case worst != nil:
		status.Phase, status.Message = worst.Phase, fmt.Sprintf("metric %q: %s", worst.Name, worst.Message)
	case done == len(metrics) && terminated:
		status.Phase, status.Message = analysisv1alpha1.AnalysisPhaseSuccessful, "terminated; no metric passed a limit"
	case done == len(metrics):
		status.Phase, status.Message = analysisv1alpha1.AnalysisPhaseSuccessful, "every metric successful"
	default:
		status.Phase, status.Message = analysisv1alpha1.AnalysisPhaseRunning, ""
		return nil
	}
	status.CompletedAt = &metav1.Time{Time: now}
	return stop(status)
}

// MarkUntilTerminated records whether the run now ends only when terminated: Running, with only metrics
// without a count (measured until then) still measuring. A step gate lets such a run measure through its
// step's pause instead of waiting for it to end.
func MarkUntilTerminated(status *analysisv1alpha1.AnalysisRunStatus, metrics []analysisv1alpha1.Metric) {
	open := status.Phase == analysisv1alpha1.AnalysisPhaseRunning && len(metrics) > 0
	for i := range metrics {
		res := FindResult(status, metrics[i].Name)
		if metrics[i].Count > 0 && (res == nil || !res.Phase.Completed()) {
			open = false
		}
	}
	status.UntilTerminated = open && slices.ContainsFunc(metrics, func(m analysisv1alpha1.Metric) bool { return m.Count == 0 })
}

// stop ends the metrics still in progress when their run ended: measurements in flight are dropped, and
// the message says the metric was stopped.
func stop(status *analysisv1alpha1.AnalysisRunStatus) map[string]analysisv1alpha1.Measurement {
	dropped := map[string]analysisv1alpha1.Measurement{}
	for i := range status.MetricResults {
		res := &status.MetricResults[i]
		if last := InFlight(res); last != nil {
			dropped[res.Name] = *last
			res.Measurements = res.Measurements[:len(res.Measurements)-1]
		}
		if !res.Phase.Completed() {
			res.Message = "stopped when the run ended"
		}
	}
	return dropped
}

// Fail ends a run that cannot be measured (a template or argument that cannot be resolved) in Error.
func Fail(status *analysisv1alpha1.AnalysisRunStatus, message string, now time.Time) {
	status.Phase, status.Message = analysisv1alpha1.AnalysisPhaseError, message
	if status.StartedAt == nil {
		status.StartedAt = &metav1.Time{Time: now}
	}
	status.CompletedAt = &metav1.Time{Time: now}
}

// SetConditions stamps the run's Completed, Ready and Stalled conditions from its phase, with generation; the
// conditions other writers added stay.
func SetConditions(status *analysisv1alpha1.AnalysisRunStatus, generation int64, now time.Time) {
	phase, done := status.Phase, status.Phase.Completed()
	reason := string(analysisv1alpha1.AnalysisPhaseRunning)
	if done {
		reason = string(phase)
	}
	for _, ct := range []struct {
		name  string
		holds bool
	}{
		{analysisv1alpha1.AnalysisRunCompleted, done},
		{analysisv1alpha1.AnalysisRunReady, phase == analysisv1alpha1.AnalysisPhaseSuccessful},
		{analysisv1alpha1.AnalysisRunStalled, done && phase != analysisv1alpha1.AnalysisPhaseSuccessful},
	} {
		c := metav1.Condition{Type: ct.name, Status: metav1.ConditionFalse, Reason: reason, Message: status.Message,
			ObservedGeneration: generation, LastTransitionTime: metav1.Time{Time: now}}
		if ct.holds {
			c.Status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&status.Conditions, c)
	}
	status.ObservedGeneration = generation
}
