package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/plan"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/provider"
)

// measured is one measurement the reconcile took, for the metrics once it is recorded.
type measured struct {
	provider string
	phase    analysisv1alpha1.AnalysisPhase
}

// advance moves a run on in status: resolved, started, measured when due, assessed. It returns when the run
// wants to be looked at again and what it measured. A run that cannot be resolved ends in Error, and the
// *unresolvableError saying why is returned after status is set.
func (r *Reconciler) advance(ctx context.Context, run *analysisv1alpha1.AnalysisRun,
	status *analysisv1alpha1.AnalysisRunStatus) (time.Duration, []measured, error) {
	if status.Phase.Completed() {
		return 0, nil, nil
	}
	metrics, err := r.resolve(ctx, run)
	var unresolvable *unresolvableError
	if errors.As(err, &unresolvable) {
		plan.Fail(status, err.Error(), r.Clock.Now())
		return 0, nil, err
	}
	if err != nil {
		return 0, nil, err
	}
	now := r.Clock.Now()
	plan.Start(status, metrics, now)
	var taken []measured
	if run.Spec.Terminate {
		plan.Terminate(status, metrics)
	} else {
		taken = r.measure(ctx, run, metrics, status, plan.Next(metrics, status, now))
	}
	r.stop(ctx, run, metrics, plan.Assess(status, metrics, run.Spec.Terminate, r.Clock.Now()))
	plan.MarkUntilTerminated(status, metrics)
	return plan.Next(metrics, status, r.Clock.Now()).RequeueAfter, taken, nil
}

// task is one measurement to take or resume.
type task struct {
	metric  *analysisv1alpha1.Metric
	index   int32
	started time.Time
	// inFlight is the metadata of the measurement resumed; nil for a new one.
	inFlight map[string]string
}

// measure takes the due measurements and resumes those in flight, side by side, and records them in status.
func (r *Reconciler) measure(ctx context.Context, run *analysisv1alpha1.AnalysisRun, metrics []analysisv1alpha1.Metric,
	status *analysisv1alpha1.AnalysisRunStatus, d plan.Decision) []measured {
	tasks := tasksOf(metrics, status, d, r.Clock.Now())
	results := make([]analysisv1alpha1.Measurement, len(tasks))
	var wg sync.WaitGroup
	for i, t := range tasks {
		wg.Go(func() { results[i] = r.measureOne(ctx, run, t) })
	}
	wg.Wait()
	taken := make([]measured, 0, len(tasks))
	for i, t := range tasks {
		plan.Record(status, t.metric, results[i])
		if results[i].Phase != analysisv1alpha1.AnalysisPhaseRunning {
			taken = append(taken, measured{provider: providerName(t.metric), phase: results[i].Phase})
		}
	}
	return taken
}

func tasksOf(metrics []analysisv1alpha1.Metric, status *analysisv1alpha1.AnalysisRunStatus, d plan.Decision, now time.Time) []task {
	byName := map[string]*analysisv1alpha1.Metric{}
	for i := range metrics {
		byName[metrics[i].Name] = &metrics[i]
	}
	var tasks []task
	for _, name := range d.Resume {
		f := plan.InFlight(plan.FindResult(status, name))
		tasks = append(tasks, task{metric: byName[name], index: f.Index, started: f.StartedAt.Time, inFlight: f.Metadata})
	}
	for _, name := range d.Measure {
		tasks = append(tasks, task{metric: byName[name], index: plan.NextIndex(plan.FindResult(status, name)), started: now})
	}
	return tasks
}

// measureOne asks the metric's provider and turns what it saw into the measurement.
func (r *Reconciler) measureOne(ctx context.Context, run *analysisv1alpha1.AnalysisRun, t task) analysisv1alpha1.Measurement {
	name := providerName(t.metric)
	start := time.Now()
	o, err := r.providerFor(t.metric).Measure(ctx, provider.Request{Run: run, Metric: t.metric, Index: t.index,
		Now: t.started, InFlight: t.inFlight})
	measurementDuration.WithLabelValues(name).Observe(time.Since(start).Seconds())
	if err != nil {
		o.Err = err
		ctrl.LoggerFrom(ctx).V(1).Info("Measurement failed", "metric", t.metric.Name, "provider", name, "error", err.Error())
	}
	return plan.Measure(ctx, t.metric, t.index, t.started, r.Clock.Now(), o)
}

func (r *Reconciler) providerFor(m *analysisv1alpha1.Metric) provider.Provider {
	switch {
	case m.Provider.Prometheus != nil:
		return r.prometheus
	case m.Provider.Web != nil:
		return r.web
	case m.Provider.Job != nil:
		return r.job
	}
	return noProvider{}
}

// providerName names a metric's provider in metrics and logs.
func providerName(m *analysisv1alpha1.Metric) string {
	switch {
	case m.Provider.Prometheus != nil:
		return "prometheus"
	case m.Provider.Web != nil:
		return "web"
	case m.Provider.Job != nil:
		return "job"
	}
	return "none"
}

// noProvider measures a metric that names no provider (the webhook refuses it; a run stored without the
// webhook gets an error per measurement instead of a panic).
type noProvider struct{}

func (noProvider) Measure(context.Context, provider.Request) (plan.Observation, error) {
	return plan.Observation{}, errors.New("the metric names no provider")
}

// stop stops the measurements in flight the run dropped: their Jobs are deleted. A Job that cannot be
// deleted now is left to the garbage collector, with the run.
func (r *Reconciler) stop(ctx context.Context, run *analysisv1alpha1.AnalysisRun, metrics []analysisv1alpha1.Metric,
	dropped map[string]analysisv1alpha1.Measurement) {
	for i := range metrics {
		meas, ok := dropped[metrics[i].Name]
		if !ok || metrics[i].Provider.Job == nil {
			continue
		}
		err := r.job.Terminate(ctx, provider.Request{Run: run, Metric: &metrics[i], Index: meas.Index, InFlight: meas.Metadata})
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Stopping a measurement", "metric", metrics[i].Name)
		}
	}
}

// unresolvableError says why a run cannot be measured: a template or Secret that does not exist, an
// argument without a value. The run ends in Error; a new run is needed.
type unresolvableError struct{ msg string }

func (e *unresolvableError) Error() string { return e.msg }

func unresolvablef(format string, args ...any) error {
	return &unresolvableError{msg: fmt.Sprintf(format, args...)}
}
