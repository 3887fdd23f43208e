package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

const (
	pSuccessful   = analysisv1alpha1.AnalysisPhaseSuccessful
	pFailed       = analysisv1alpha1.AnalysisPhaseFailed
	pInconclusive = analysisv1alpha1.AnalysisPhaseInconclusive
	pError        = analysisv1alpha1.AnalysisPhaseError
	pRunning      = analysisv1alpha1.AnalysisPhaseRunning
)

func TestMeasure(t *testing.T) {
	m := &analysisv1alpha1.Metric{SuccessCondition: "result < 0.05"}
	ctx := context.Background()
	got := Measure(ctx, m, 3, t0, t0.Add(time.Second), Observation{Done: true, Value: 0.01})
	want := analysisv1alpha1.Measurement{Index: 3, Phase: pSuccessful, Value: "0.01", Message: "successCondition holds",
		StartedAt: at(0), FinishedAt: ptr.To(at(time.Second))}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("judged (-want +got):\n%s", diff)
	}
	got = Measure(ctx, m, 1, t0, t0, Observation{Err: errors.New("connection refused")})
	if got.Phase != pError || got.Message != "connection refused" || got.FinishedAt == nil {
		t.Errorf("error: %+v", got)
	}
	got = Measure(ctx, m, 1, t0, t0, Observation{Metadata: map[string]string{"job-name": "j"}})
	if got.Phase != pRunning || got.FinishedAt != nil || got.Metadata["job-name"] != "j" {
		t.Errorf("in flight: %+v", got)
	}
	got = Measure(ctx, m, 1, t0, t0, Observation{Done: true, Phase: pFailed, Message: "Job failed: BackoffLimitExceeded"})
	if got.Phase != pFailed || got.Message != "Job failed: BackoffLimitExceeded" || got.Value != "" {
		t.Errorf("provider verdict: %+v", got)
	}
}

func TestFormatValue(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{0.25, "0.25"},
		{[]any{1.0, 2.5}, "[1,2.5]"},
		{map[string]any{"ok": true}, `{"ok":true}`},
		{math.NaN(), "NaN"},
		{[]any{math.Inf(1)}, "[+Inf]"},
		{strings.Repeat("x", 300), `"` + strings.Repeat("x", 252) + "..."},
	}
	for _, c := range cases {
		if got := FormatValue(c.v); got != c.want {
			t.Errorf("FormatValue(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// record plays phases into a fresh result of m and returns it.
func record(m *analysisv1alpha1.Metric, phases ...analysisv1alpha1.AnalysisPhase) *analysisv1alpha1.MetricResult {
	status := &analysisv1alpha1.AnalysisRunStatus{}
	for i, p := range phases {
		meas := finished(int32(i+1), p, 0)
		meas.Message = fmt.Sprintf("m%d", i+1)
		Record(status, m, meas)
	}
	return FindResult(status, m.Name)
}

func TestRecordLimits(t *testing.T) {
	cases := []struct {
		name    string
		metric  analysisv1alpha1.Metric
		phases  []analysisv1alpha1.AnalysisPhase
		want    analysisv1alpha1.AnalysisPhase
		message string
	}{
		{name: "one failure fails by default", phases: []analysisv1alpha1.AnalysisPhase{pSuccessful, pFailed}, want: pFailed,
			message: "1 of 2 measurements failed, more than failureLimit 0"},
		{name: "within failureLimit", metric: analysisv1alpha1.Metric{FailureLimit: 2},
			phases: []analysisv1alpha1.AnalysisPhase{pFailed, pSuccessful, pFailed}, want: pRunning},
		{name: "past failureLimit", metric: analysisv1alpha1.Metric{FailureLimit: 2},
			phases: []analysisv1alpha1.AnalysisPhase{pFailed, pFailed, pSuccessful, pFailed}, want: pFailed,
			message: "3 of 4 measurements failed, more than failureLimit 2"},
		{name: "inconclusive", phases: []analysisv1alpha1.AnalysisPhase{pInconclusive}, want: pInconclusive,
			message: "1 measurements inconclusive, more than inconclusiveLimit 0"},
		{name: "inconclusive answers do not count toward count", metric: analysisv1alpha1.Metric{Count: 1, InconclusiveLimit: 5},
			phases: []analysisv1alpha1.AnalysisPhase{pInconclusive, pInconclusive}, want: pRunning},
		{name: "a conclusive answer after inconclusive ones", metric: analysisv1alpha1.Metric{Count: 1, InconclusiveLimit: 5},
			phases: []analysisv1alpha1.AnalysisPhase{pInconclusive, pInconclusive, pSuccessful}, want: pSuccessful,
			message: "1 measurements: 1 successful, 0 failed (and 2 inconclusive)"},
		{name: "count reached", metric: analysisv1alpha1.Metric{Count: 3, FailureLimit: 1},
			phases: []analysisv1alpha1.AnalysisPhase{pSuccessful, pFailed, pSuccessful}, want: pSuccessful,
			message: "3 measurements: 2 successful, 1 failed (and 0 inconclusive)"},
		{name: "errors do not count toward count", metric: analysisv1alpha1.Metric{Count: 2},
			phases: []analysisv1alpha1.AnalysisPhase{pSuccessful, pError}, want: pRunning},
		{name: "errors within the default limit", phases: []analysisv1alpha1.AnalysisPhase{pError, pError, pError, pError}, want: pRunning},
		{name: "errors past the default limit", phases: []analysisv1alpha1.AnalysisPhase{pError, pError, pError, pError, pError}, want: pError,
			message: "5 measurements in a row could not be taken, more than consecutiveErrorLimit 4: m5"},
		{name: "a verdict resets the errors in a row", metric: analysisv1alpha1.Metric{ConsecutiveErrorLimit: ptr.To[int32](1)},
			phases: []analysisv1alpha1.AnalysisPhase{pError, pSuccessful, pError}, want: pRunning},
		{name: "no error tolerated", metric: analysisv1alpha1.Metric{ConsecutiveErrorLimit: ptr.To[int32](0)},
			phases: []analysisv1alpha1.AnalysisPhase{pError}, want: pError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.metric.Name = "m"
			res := record(&c.metric, c.phases...)
			if res.Phase != c.want || res.Message != c.message && c.message != "" {
				t.Errorf("phase %s %q, want %s %q", res.Phase, res.Message, c.want, c.message)
			}
		})
	}
}

func TestRecordCountsAndRetention(t *testing.T) {
	m := &analysisv1alpha1.Metric{Name: "m", FailureLimit: 100, InconclusiveLimit: 100}
	var phases []analysisv1alpha1.AnalysisPhase
	for i := range 14 {
		phases = append(phases, []analysisv1alpha1.AnalysisPhase{pSuccessful, pFailed, pInconclusive, pError}[i%4])
	}
	res := record(m, phases...)
	if res.Count != 8 || res.Successful != 4 || res.Failed != 4 || res.Inconclusive != 3 || res.Error != 3 || res.ConsecutiveError != 0 {
		t.Errorf("counts %+v", res)
	}
	if len(res.Measurements) != analysisv1alpha1.MeasurementRetention || res.Measurements[0].Index != 5 || res.Measurements[9].Index != 14 {
		t.Errorf("kept %d measurements, %d to %d", len(res.Measurements), res.Measurements[0].Index, res.Measurements[len(res.Measurements)-1].Index)
	}
}

// A measurement in flight is replaced by its later states, and counted once it finishes.
func TestRecordInFlight(t *testing.T) {
	m := &analysisv1alpha1.Metric{Name: "job", Count: 1}
	status := &analysisv1alpha1.AnalysisRunStatus{}
	Record(status, m, running(1, 0))
	Record(status, m, running(1, 0))
	res := FindResult(status, "job")
	if len(res.Measurements) != 1 || res.Phase != pRunning || res.Count != 0 {
		t.Fatalf("in flight: %+v", res)
	}
	Record(status, m, finished(1, pSuccessful, time.Minute))
	if len(res.Measurements) != 1 || res.Phase != pSuccessful || res.Count != 1 {
		t.Errorf("finished: %+v", res)
	}
}

func TestAssess(t *testing.T) {
	metrics := []analysisv1alpha1.Metric{metric("a"), metric("b"), metric("c")}
	result := func(name string, phase analysisv1alpha1.AnalysisPhase) analysisv1alpha1.MetricResult {
		return analysisv1alpha1.MetricResult{Name: name, Phase: phase, Message: name + " says so"}
	}
	cases := []struct {
		name       string
		results    []analysisv1alpha1.MetricResult
		terminated bool
		want       analysisv1alpha1.AnalysisPhase
		message    string
	}{
		{name: "in progress", results: []analysisv1alpha1.MetricResult{result("a", pSuccessful), result("b", pRunning)}, want: pRunning},
		{name: "all successful", results: []analysisv1alpha1.MetricResult{result("a", pSuccessful), result("b", pSuccessful), result("c", pSuccessful)},
			want: pSuccessful, message: "every metric successful"},
		{name: "one failure ends the run", results: []analysisv1alpha1.MetricResult{result("a", pRunning), result("b", pFailed)},
			want: pFailed, message: `metric "b": b says so`},
		{name: "the worst wins", results: []analysisv1alpha1.MetricResult{result("a", pInconclusive), result("b", pError), result("c", pFailed)},
			want: pFailed, message: `metric "c": c says so`},
		{name: "error over inconclusive", results: []analysisv1alpha1.MetricResult{result("a", pInconclusive), result("b", pError)},
			want: pError, message: `metric "b": b says so`},
		{name: "terminated", terminated: true,
			results: []analysisv1alpha1.MetricResult{result("a", pSuccessful), result("b", pSuccessful), result("c", pSuccessful)},
			want:    pSuccessful, message: "terminated; no metric passed a limit"},
		{name: "results of metrics no longer defined do not count",
			results: []analysisv1alpha1.MetricResult{result("a", pSuccessful), result("b", pSuccessful), result("c", pSuccessful), result("gone", pFailed)},
			want:    pSuccessful},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status := &analysisv1alpha1.AnalysisRunStatus{Phase: pRunning, MetricResults: c.results}
			Assess(status, metrics, c.terminated, t0)
			if status.Phase != c.want || (c.message != "" && status.Message != c.message) {
				t.Errorf("run %s %q, want %s %q", status.Phase, status.Message, c.want, c.message)
			}
			if status.Phase.Completed() != (status.CompletedAt != nil) {
				t.Errorf("completedAt %v in phase %s", status.CompletedAt, status.Phase)
			}
		})
	}
}

func TestTerminate(t *testing.T) {
	metrics := []analysisv1alpha1.Metric{metric("web"), metric("job"), metric("done")}
	status := &analysisv1alpha1.AnalysisRunStatus{Phase: pRunning, MetricResults: []analysisv1alpha1.MetricResult{
		{Name: "web", Phase: pRunning, Count: 2, Successful: 2, Measurements: []analysisv1alpha1.Measurement{finished(2, pSuccessful, 0)}},
		{Name: "job", Phase: pRunning, Measurements: []analysisv1alpha1.Measurement{running(1, 0)}},
		{Name: "done", Phase: pSuccessful, Message: "kept"},
	}}
	Terminate(status, metrics)
	dropped := Assess(status, metrics, true, t0)
	if len(dropped) != 1 || dropped["job"].Index != 1 {
		t.Errorf("dropped %v", dropped)
	}
	if status.Phase != pSuccessful || len(FindResult(status, "job").Measurements) != 0 ||
		FindResult(status, "web").Message != "terminated after 2 measurements: 2 successful, 0 failed (and 0 inconclusive)" ||
		FindResult(status, "done").Message != "kept" {
		t.Errorf("terminated: %+v", status)
	}
}

// A run that fails stops its other metrics, dropping their measurements in flight.
func TestAssessStopsTheOthers(t *testing.T) {
	metrics := []analysisv1alpha1.Metric{metric("rate"), metric("job")}
	status := &analysisv1alpha1.AnalysisRunStatus{Phase: pRunning, MetricResults: []analysisv1alpha1.MetricResult{
		{Name: "rate", Phase: pFailed, Message: "too many"},
		{Name: "job", Phase: pRunning, Measurements: []analysisv1alpha1.Measurement{finished(1, pSuccessful, 0), running(2, 0)}},
	}}
	dropped := Assess(status, metrics, false, t0)
	job := FindResult(status, "job")
	if status.Phase != pFailed || len(dropped) != 1 || dropped["job"].Index != 2 || len(job.Measurements) != 1 ||
		job.Phase != pRunning || job.Message != "stopped when the run ended" {
		t.Errorf("run %s, dropped %v, job %+v", status.Phase, dropped, job)
	}
	if again := Assess(status, metrics, false, t0); again != nil {
		t.Errorf("a finished run assessed again dropped %v", again)
	}
}

func TestSetConditions(t *testing.T) {
	status := &analysisv1alpha1.AnalysisRunStatus{Phase: pRunning}
	SetConditions(status, 2, t0)
	check := func(ct string, want metav1.ConditionStatus, reason string, since time.Time) {
		t.Helper()
		c := meta.FindStatusCondition(status.Conditions, ct)
		if c == nil || c.Status != want || c.Reason != reason || c.ObservedGeneration != status.ObservedGeneration || !c.LastTransitionTime.Time.Equal(since) {
			t.Errorf("%s: %+v, want %s %s since %v", ct, c, want, reason, since)
		}
	}
	check(analysisv1alpha1.AnalysisRunCompleted, metav1.ConditionFalse, "Running", t0)
	check(analysisv1alpha1.AnalysisRunReady, metav1.ConditionFalse, "Running", t0)
	check(analysisv1alpha1.AnalysisRunStalled, metav1.ConditionFalse, "Running", t0)
	status.Phase = pSuccessful
	SetConditions(status, 3, t0.Add(time.Minute))
	check(analysisv1alpha1.AnalysisRunCompleted, metav1.ConditionTrue, "Successful", t0.Add(time.Minute))
	check(analysisv1alpha1.AnalysisRunReady, metav1.ConditionTrue, "Successful", t0.Add(time.Minute))
	check(analysisv1alpha1.AnalysisRunStalled, metav1.ConditionFalse, "Successful", t0)
	status.Phase = pFailed
	SetConditions(status, 3, t0.Add(2*time.Minute))
	check(analysisv1alpha1.AnalysisRunCompleted, metav1.ConditionTrue, "Failed", t0.Add(time.Minute))
	check(analysisv1alpha1.AnalysisRunReady, metav1.ConditionFalse, "Failed", t0.Add(2*time.Minute))
	check(analysisv1alpha1.AnalysisRunStalled, metav1.ConditionTrue, "Failed", t0.Add(2*time.Minute))
	if got := []string{status.Conditions[0].Type, status.Conditions[1].Type, status.Conditions[2].Type}; got[0] != "Completed" || got[1] != "Ready" || got[2] != "Stalled" {
		t.Errorf("conditions in the order %v", got)
	}
	if status.ObservedGeneration != 3 {
		t.Errorf("observedGeneration %d", status.ObservedGeneration)
	}
}

func TestMarkUntilTerminated(t *testing.T) {
	counted := func(name string, n int32) analysisv1alpha1.Metric {
		m := metric(name)
		m.Count = n
		return m
	}
	result := func(name string, phase analysisv1alpha1.AnalysisPhase) analysisv1alpha1.MetricResult {
		return analysisv1alpha1.MetricResult{Name: name, Phase: phase}
	}
	cases := []struct {
		name    string
		metrics []analysisv1alpha1.Metric
		results []analysisv1alpha1.MetricResult
		phase   analysisv1alpha1.AnalysisPhase
		want    bool
	}{
		{"only open-ended metrics", []analysisv1alpha1.Metric{counted("rate", 0)}, []analysisv1alpha1.MetricResult{result("rate", pRunning)}, pRunning, true},
		{"a counted metric still measuring", []analysisv1alpha1.Metric{counted("rate", 0), counted("ci", 3)},
			[]analysisv1alpha1.MetricResult{result("rate", pRunning), result("ci", pRunning)}, pRunning, false},
		{"the counted metric done", []analysisv1alpha1.Metric{counted("rate", 0), counted("ci", 3)},
			[]analysisv1alpha1.MetricResult{result("rate", pRunning), result("ci", pSuccessful)}, pRunning, true},
		{"only counted metrics", []analysisv1alpha1.Metric{counted("ci", 3)}, []analysisv1alpha1.MetricResult{result("ci", pRunning)}, pRunning, false},
		{"ended", []analysisv1alpha1.Metric{counted("rate", 0)}, []analysisv1alpha1.MetricResult{result("rate", pSuccessful)}, pSuccessful, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status := &analysisv1alpha1.AnalysisRunStatus{Phase: c.phase, MetricResults: c.results, UntilTerminated: !c.want}
			MarkUntilTerminated(status, c.metrics)
			if status.UntilTerminated != c.want {
				t.Errorf("untilTerminated = %v, want %v", status.UntilTerminated, c.want)
			}
		})
	}
}
