package plan

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

// finished is a measurement started at t0 and finished end later.
func finished(index int32, phase analysisv1alpha1.AnalysisPhase, end time.Duration) analysisv1alpha1.Measurement {
	e := at(end)
	return analysisv1alpha1.Measurement{Index: index, Phase: phase, StartedAt: at(0), FinishedAt: &e}
}

func running(index int32, start time.Duration) analysisv1alpha1.Measurement {
	return analysisv1alpha1.Measurement{Index: index, Phase: analysisv1alpha1.AnalysisPhaseRunning, StartedAt: at(start)}
}

func TestNext(t *testing.T) {
	periodic := func(name string, interval, delay time.Duration) analysisv1alpha1.Metric {
		m := metric(name)
		m.Interval = &metav1.Duration{Duration: interval}
		if delay > 0 {
			m.InitialDelay = &metav1.Duration{Duration: delay}
		}
		return m
	}
	once := metric("once")
	once.Count = 1
	result := func(name string, phase analysisv1alpha1.AnalysisPhase, ms ...analysisv1alpha1.Measurement) analysisv1alpha1.MetricResult {
		return analysisv1alpha1.MetricResult{Name: name, Phase: phase, Measurements: ms}
	}
	const (
		run = analysisv1alpha1.AnalysisPhaseRunning
		ok  = analysisv1alpha1.AnalysisPhaseSuccessful
	)
	cases := []struct {
		name     string
		metrics  []analysisv1alpha1.Metric
		results  []analysisv1alpha1.MetricResult
		phase    analysisv1alpha1.AnalysisPhase
		now      time.Duration
		measure  []string
		resume   []string
		requeue  time.Duration
		notStart bool
	}{{
		name: "first measurements at once", metrics: []analysisv1alpha1.Metric{periodic("a", time.Minute, 0), once},
		measure: []string{"a", "once"},
	}, {
		name: "the initial delay holds the first", metrics: []analysisv1alpha1.Metric{periodic("a", time.Minute, 30*time.Second)},
		now: 10 * time.Second, requeue: 20 * time.Second,
	}, {
		name: "the initial delay passed", metrics: []analysisv1alpha1.Metric{periodic("a", time.Minute, 30*time.Second)},
		now: 30 * time.Second, measure: []string{"a"},
	}, {
		name: "interval counts from the end of the last measurement", metrics: []analysisv1alpha1.Metric{periodic("a", time.Minute, 0)},
		results: []analysisv1alpha1.MetricResult{result("a", run, finished(1, ok, 5*time.Second))},
		now:     50 * time.Second, requeue: 15 * time.Second,
	}, {
		name: "the earliest of several", metrics: []analysisv1alpha1.Metric{periodic("a", time.Minute, 0), periodic("b", 10*time.Second, 0)},
		results: []analysisv1alpha1.MetricResult{result("a", run, finished(1, ok, 0)), result("b", run, finished(1, ok, 0))},
		now:     5 * time.Second, requeue: 5 * time.Second,
	}, {
		name: "due now and another later", metrics: []analysisv1alpha1.Metric{periodic("a", time.Minute, 0), periodic("b", 10*time.Second, 0)},
		results: []analysisv1alpha1.MetricResult{result("a", run, finished(1, ok, 0)), result("b", run, finished(1, ok, 0))},
		now:     10 * time.Second, measure: []string{"b"}, requeue: 50 * time.Second,
	}, {
		name: "a measurement in flight is resumed", metrics: []analysisv1alpha1.Metric{periodic("a", time.Minute, 0)},
		results: []analysisv1alpha1.MetricResult{result("a", run, finished(1, ok, 0), running(2, time.Minute))},
		now:     90 * time.Second, resume: []string{"a"}, requeue: ResumeAfter,
	}, {
		name: "a finished metric is left alone", metrics: []analysisv1alpha1.Metric{once, periodic("a", time.Minute, 0)},
		results: []analysisv1alpha1.MetricResult{result("once", ok, finished(1, ok, 0)), result("a", run, finished(1, ok, 0))},
		now:     time.Minute, measure: []string{"a"},
	}, {
		name: "an error without interval is retried after ErrorRetryAfter", metrics: []analysisv1alpha1.Metric{once},
		results: []analysisv1alpha1.MetricResult{result("once", run, finished(1, analysisv1alpha1.AnalysisPhaseError, 0))},
		now:     time.Second, requeue: ErrorRetryAfter - time.Second,
	}, {
		name: "an interval below MinInterval", metrics: []analysisv1alpha1.Metric{periodic("a", time.Millisecond, 0)},
		results: []analysisv1alpha1.MetricResult{result("a", run, finished(1, ok, 0))},
		now:     time.Millisecond, requeue: MinInterval - time.Millisecond,
	}, {
		name: "a finished run measures nothing", metrics: []analysisv1alpha1.Metric{periodic("a", time.Minute, 0)},
		phase: analysisv1alpha1.AnalysisPhaseFailed, now: time.Hour,
	}, {
		name: "a run not started measures nothing", metrics: []analysisv1alpha1.Metric{periodic("a", time.Minute, 0)},
		notStart: true,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status := &analysisv1alpha1.AnalysisRunStatus{Phase: run, MetricResults: c.results, StartedAt: ptr.To(at(0))}
			if c.phase != "" {
				status.Phase = c.phase
			}
			if c.notStart {
				status.StartedAt = nil
			}
			d := Next(c.metrics, status, t0.Add(c.now))
			if !slices.Equal(d.Measure, c.measure) || !slices.Equal(d.Resume, c.resume) || d.RequeueAfter != c.requeue {
				t.Errorf("Next = measure %v resume %v requeue %v, want %v %v %v", d.Measure, d.Resume, d.RequeueAfter,
					c.measure, c.resume, c.requeue)
			}
		})
	}
}

func TestNextIndex(t *testing.T) {
	if got := NextIndex(nil); got != 1 {
		t.Errorf("first index %d", got)
	}
	if got := NextIndex(&analysisv1alpha1.MetricResult{Count: 3, Inconclusive: 1, Error: 2}); got != 7 {
		t.Errorf("index after 3 conclusive, 1 inconclusive and 2 errors %d", got)
	}
}
