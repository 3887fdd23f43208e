package plan

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

// MinInterval is the shortest time between two measurements of a metric, whatever its interval says: a run
// must not spin on a provider.
const MinInterval = time.Second

// ErrorRetryAfter is how soon a measurement that could not be taken is retried when its metric has no
// interval (one measurement only).
const ErrorRetryAfter = 10 * time.Second

// ResumeAfter is how soon a measurement in flight (a Job) is looked at again when nothing else wakes the run.
const ResumeAfter = 10 * time.Second

// Decision is what a run does now.
type Decision struct {
	// Measure are the metrics whose next measurement is due: start one each.
	Measure []string
	// Resume are the metrics with a measurement in flight: look at it.
	Resume []string
	// RequeueAfter is when the earliest later measurement is due (or a measurement in flight is looked at
	// again); 0 when nothing is scheduled.
	RequeueAfter time.Duration
}

// Next decides, for a started run in progress, which metrics to measure now and when to look again. A
// metric's first measurement is due initialDelay after the run started, each next one interval (at least
// MinInterval) after the previous one finished; a measurement that could not be taken is retried after
// interval too, or ErrorRetryAfter for a metric without one.
func Next(metrics []analysisv1alpha1.Metric, status *analysisv1alpha1.AnalysisRunStatus, now time.Time) Decision {
	var d Decision
	if status.Phase.Completed() || status.StartedAt == nil {
		return d
	}
	for i := range metrics {
		m := &metrics[i]
		res := FindResult(status, m.Name)
		if res != nil && res.Phase.Completed() {
			continue
		}
		if last := lastMeasurement(res); last != nil && last.Phase == analysisv1alpha1.AnalysisPhaseRunning {
			d.Resume = append(d.Resume, m.Name)
			d.requeue(ResumeAfter)
			continue
		}
		if due := dueAt(m, res, status.StartedAt.Time); !due.After(now) {
			d.Measure = append(d.Measure, m.Name)
		} else {
			d.requeue(due.Sub(now))
		}
	}
	return d
}

func (d *Decision) requeue(after time.Duration) {
	if d.RequeueAfter == 0 || after < d.RequeueAfter {
		d.RequeueAfter = after
	}
}

// dueAt is when a metric's next measurement is due.
func dueAt(m *analysisv1alpha1.Metric, res *analysisv1alpha1.MetricResult, started time.Time) time.Time {
	last := lastMeasurement(res)
	if last == nil {
		return started.Add(duration(m.InitialDelay))
	}
	finished := last.StartedAt.Time
	if last.FinishedAt != nil {
		finished = last.FinishedAt.Time
	}
	interval := duration(m.Interval)
	if interval == 0 && last.Phase == analysisv1alpha1.AnalysisPhaseError {
		interval = ErrorRetryAfter
	}
	return finished.Add(max(interval, MinInterval))
}

// NextIndex is the number of a metric's next measurement.
func NextIndex(res *analysisv1alpha1.MetricResult) int32 {
	if res == nil {
		return 1
	}
	return res.Count + res.Inconclusive + res.Error + 1
}

// FindResult is the status's result of the metric named name, nil if there is none.
func FindResult(status *analysisv1alpha1.AnalysisRunStatus, name string) *analysisv1alpha1.MetricResult {
	for i := range status.MetricResults {
		if status.MetricResults[i].Name == name {
			return &status.MetricResults[i]
		}
	}
	return nil
}

// InFlight is the metric's measurement in flight, nil if there is none.
func InFlight(res *analysisv1alpha1.MetricResult) *analysisv1alpha1.Measurement {
	if last := lastMeasurement(res); last != nil && last.Phase == analysisv1alpha1.AnalysisPhaseRunning {
		return last
	}
	return nil
}

func lastMeasurement(res *analysisv1alpha1.MetricResult) *analysisv1alpha1.Measurement {
	if res == nil || len(res.Measurements) == 0 {
		return nil
	}
	return &res.Measurements[len(res.Measurements)-1]
}

func duration(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}
