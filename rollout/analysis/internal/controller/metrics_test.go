package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// A run's transitions, once written, count and record events: the final phase once, a metric's end once.
func TestRecordTransitions(t *testing.T) {
	recorder := events.NewFakeRecorder(10)
	r := &Reconciler{Deps: reconcilerdeps.Deps{Recorder: recorder}}
	failedRuns := managertest.Counter(t, RunsName, map[string]string{"phase": "Failed"})
	failedWeb := managertest.Counter(t, MeasurementsName, map[string]string{"provider": "web", "phase": "Failed"})
	before := analysisv1alpha1.AnalysisRunStatus{Phase: analysisv1alpha1.AnalysisPhaseRunning, StartedAt: &metav1.Time{},
		MetricResults: []analysisv1alpha1.MetricResult{{Name: "rate", Phase: analysisv1alpha1.AnalysisPhaseRunning}}}
	run := &analysisv1alpha1.AnalysisRun{Status: *before.DeepCopy()}
	run.Status.Phase, run.Status.Message = analysisv1alpha1.AnalysisPhaseFailed, `metric "rate": too many`
	run.Status.MetricResults[0].Phase, run.Status.MetricResults[0].Message = analysisv1alpha1.AnalysisPhaseFailed, "too many"
	r.recordTransitions(run, &before, []measured{{provider: "web", phase: analysisv1alpha1.AnalysisPhaseFailed}})
	r.recordTransitions(run, &run.Status, nil) // nothing changed since
	if got := managertest.Counter(t, RunsName, map[string]string{"phase": "Failed"}); got != failedRuns+1 {
		t.Errorf("failed runs %v, was %v", got, failedRuns)
	}
	if got := managertest.Counter(t, MeasurementsName, map[string]string{"provider": "web", "phase": "Failed"}); got != failedWeb+1 {
		t.Errorf("failed web measurements %v, was %v", got, failedWeb)
	}
	close(recorder.Events)
	var got []string
	for e := range recorder.Events {
		got = append(got, e)
	}
	want := []string{"Warning MetricCompleted Metric rate Failed: too many", `Warning AnalysisFailed metric "rate": too many`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
