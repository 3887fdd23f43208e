package plan

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite golden files")

// story is a run played against values the providers would return, one list per metric, consumed in order; a
// nil value is a measurement that could not be taken, a string "job:<phase>" a Job's outcome, "job:" a Job in
// flight.
type story struct {
	metrics   []analysisv1alpha1.Metric
	values    map[string][]any
	terminate time.Duration // when the run is terminated; 0 never
}

// play runs the story the way the controller does (start, next, measure, record, assess) and logs every
// wake-up, until the run finishes or an hour passes.
func play(s story) string {
	var log strings.Builder
	status := &analysisv1alpha1.AnalysisRunStatus{}
	now := t0
	for now.Sub(t0) < time.Hour {
		Start(status, s.metrics, now)
		terminated := s.terminate > 0 && !now.Before(t0.Add(s.terminate))
		if terminated {
			Terminate(status, s.metrics)
		}
		d := Next(s.metrics, status, now)
		if terminated {
			d = Decision{}
		}
		for _, name := range append(d.Resume, d.Measure...) {
			m, meas := metricNamed(s.metrics, name), measureFrom(s, status, name, now)
			Record(status, m, meas)
			line := fmt.Sprintf("%6s %-10s #%d %-12s %-6s %s", now.Sub(t0), name, meas.Index, meas.Phase, meas.Value, meas.Message)
			log.WriteString(strings.TrimRight(line, " ") + "\n")
		}
		for name, meas := range Assess(status, s.metrics, terminated, now) {
			fmt.Fprintf(&log, "%6s %-10s #%d stopped\n", now.Sub(t0), name, meas.Index)
		}
		if status.Phase.Completed() {
			fmt.Fprintf(&log, "%6s run %s: %s\n", now.Sub(t0), status.Phase, status.Message)
			return log.String()
		}
		after := Next(s.metrics, status, now).RequeueAfter
		if after == 0 {
			fmt.Fprintf(&log, "%6s run %s, nothing scheduled\n", now.Sub(t0), status.Phase)
			return log.String()
		}
		now = now.Add(after)
		if s.terminate > 0 && now.After(t0.Add(s.terminate)) {
			now = t0.Add(s.terminate)
		}
	}
	return log.String() + "still running after an hour\n"
}

func metricNamed(metrics []analysisv1alpha1.Metric, name string) *analysisv1alpha1.Metric {
	for i := range metrics {
		if metrics[i].Name == name {
			return &metrics[i]
		}
	}
	return nil
}

// measureFrom takes the metric's next value and measures it, resuming a measurement in flight.
func measureFrom(s story, status *analysisv1alpha1.AnalysisRunStatus, name string, now time.Time) analysisv1alpha1.Measurement {
	res := FindResult(status, name)
	index, started := NextIndex(res), now
	if f := InFlight(res); f != nil {
		index, started = f.Index, f.StartedAt.Time
	}
	var v any
	if vs := s.values[name]; len(vs) > 0 {
		v, s.values[name] = vs[0], vs[1:]
	}
	o := Observation{Done: true, Value: v}
	switch t := v.(type) {
	case nil:
		o.Err = errors.New("connection refused")
	case string:
		if phase, ok := strings.CutPrefix(t, "job:"); ok {
			o = Observation{Done: phase != "", Phase: analysisv1alpha1.AnalysisPhase(phase), Message: "Job " + phase}
		}
	}
	return Measure(context.Background(), metricNamed(s.metrics, name), index, started, now, o)
}

func every(name string, interval time.Duration, count int32, success string) analysisv1alpha1.Metric {
	m := metric(name)
	m.Interval, m.Count, m.SuccessCondition = &metav1.Duration{Duration: interval}, count, success
	return m
}

func TestStories(t *testing.T) {
	errorRate := every("error-rate", 10*time.Second, 0, "result < 0.05")
	errorRate.FailureLimit = 1
	latency := every("latency", 20*time.Second, 3, "result.all(x, x < 300)")
	latency.InitialDelay = &metav1.Duration{Duration: 5 * time.Second}
	ciGate := every("ci", 10*time.Second, 1, `result == "passed"`)
	ciGate.FailureCondition, ciGate.InconclusiveLimit = `result == "failed"`, 10
	job := every("smoke", 0, 1, "")
	job.Interval = nil
	stories := map[string]story{
		"healthy": {metrics: []analysisv1alpha1.Metric{every("error-rate", 10*time.Second, 4, "result < 0.05"), latency},
			values: map[string][]any{"error-rate": {0.01, 0.02, 0.01, 0.0}, "latency": {[]any{120.0, 180.0}, []any{150.0}, []any{90.0, 200.0}}}},
		"error-spike": {metrics: []analysisv1alpha1.Metric{errorRate, latency},
			values: map[string][]any{"error-rate": {0.01, 0.02, 0.3, 0.01, 0.4}, "latency": {[]any{120.0}, []any{150.0}, []any{90.0}}}},
		"provider-down": {metrics: []analysisv1alpha1.Metric{errorRate},
			values: map[string][]any{"error-rate": {0.01, nil, nil, 0.02, nil, nil, nil, nil, nil}}},
		"job-in-flight": {metrics: []analysisv1alpha1.Metric{job},
			values: map[string][]any{"smoke": {"job:", "job:", "job:Successful"}}},
		"ci-gate": {metrics: []analysisv1alpha1.Metric{ciGate},
			values: map[string][]any{"ci": {"running", "running", nil, "running", "passed"}}},
		"terminated": {metrics: []analysisv1alpha1.Metric{errorRate, job}, terminate: 35 * time.Second,
			values: map[string][]any{"error-rate": {0.01, 0.2, 0.01, 0.02}, "smoke": {"job:", "job:", "job:", "job:", "job:"}}},
	}
	for name, s := range stories {
		t.Run(name, func(t *testing.T) {
			got := play(s)
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("story %s:\n--- got\n%s--- want\n%s", name, got, want)
			}
		})
	}
}
