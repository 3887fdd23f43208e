package controller

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/plan"
	"github.com/flotilla-dev/flotilla/test/prometheus"
)

// errorRatio is a canary's error ratio in Prometheus's text format, a gauge the test drives.
type errorRatio struct {
	mu    sync.Mutex
	value float64
}

func (g *errorRatio) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, _ = fmt.Fprintf(w, "# TYPE canary_error_ratio gauge\ncanary_error_ratio %g\n", g.value)
}

func (g *errorRatio) set(v float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.value = v
}

func promMetric(address string) analysisv1alpha1.Metric {
	return analysisv1alpha1.Metric{Name: "error-ratio", Interval: dur(time.Second), Count: 3,
		SuccessCondition: "result < 0.05", FailureCondition: "result >= 0.05",
		Provider: analysisv1alpha1.MetricProvider{Prometheus: &analysisv1alpha1.PrometheusMetric{
			Address: address, Query: "max(canary_error_ratio)"}}}
}

// scrapedCanary starts a real Prometheus scraping a canary's error ratio, healthy (0.01) until the test sets
// it, and the controller; it returns once Prometheus has the first sample.
func scrapedCanary(t *testing.T) (*errorRatio, string, *env) {
	gauge := &errorRatio{value: 0.01}
	srv := httptest.NewServer(gauge)
	t.Cleanup(srv.Close)
	prom := prometheus.Start(t, strings.TrimPrefix(srv.URL, "http://"))
	e := start(t)
	prometheus.WaitFor(t, prom, "canary_error_ratio", "0.01")
	return gauge, prom, e
}

// Against a real Prometheus scraping a canary's metrics: a healthy canary passes, an error spike fails.
func TestPrometheusServer(t *testing.T) {
	t.Parallel()
	gauge, prom, e := scrapedCanary(t)

	e.create(t, newRun("healthy", promMetric(prom)))
	run := e.completed(t, "healthy")
	res := plan.FindResult(&run.Status, "error-ratio")
	if run.Status.Phase != analysisv1alpha1.AnalysisPhaseSuccessful || res.Successful != 3 || res.Measurements[0].Value != "0.01" {
		t.Fatalf("healthy canary: run %s %q, metric %+v", run.Status.Phase, run.Status.Message, res)
	}

	gauge.set(0.5)
	prometheus.WaitFor(t, prom, "canary_error_ratio", "0.5")
	e.create(t, newRun("spike", promMetric(prom)))
	run = e.completed(t, "spike")
	res = plan.FindResult(&run.Status, "error-ratio")
	if run.Status.Phase != analysisv1alpha1.AnalysisPhaseFailed || res.Failed != 1 || res.Measurements[0].Value != "0.5" {
		t.Fatalf("error spike: run %s %q, metric %+v", run.Status.Phase, run.Status.Message, res)
	}
}

// A range query against the same real Prometheus: the conditions read the window's points as a list, so one
// point of the spike inside it fails the measurement.
func TestPrometheusServerRange(t *testing.T) {
	t.Parallel()
	gauge, prom, e := scrapedCanary(t)
	time.Sleep(4 * time.Second) // four seconds of healthy samples, so the window holds no gap

	ranged := func() analysisv1alpha1.Metric {
		m := promMetric(prom)
		m.Count = 1
		m.SuccessCondition, m.FailureCondition = "size(result) == 4 && result.all(x, x < 0.05)", "result.exists(x, x >= 0.05)"
		m.Provider.Prometheus.Range = &analysisv1alpha1.PrometheusRange{Start: *dur(3 * time.Second), Step: *dur(time.Second)}
		return m
	}
	e.create(t, newRun("healthy-window", ranged()))
	run := e.completed(t, "healthy-window")
	res := plan.FindResult(&run.Status, "error-ratio")
	if run.Status.Phase != analysisv1alpha1.AnalysisPhaseSuccessful || res.Successful != 1 || !strings.HasPrefix(res.Measurements[0].Value, "[") {
		t.Fatalf("a healthy window: run %s %q, metric %+v", run.Status.Phase, run.Status.Message, res)
	}

	gauge.set(0.5)
	prometheus.WaitFor(t, prom, "canary_error_ratio", "0.5")
	e.create(t, newRun("spiked-window", ranged()))
	run = e.completed(t, "spiked-window")
	res = plan.FindResult(&run.Status, "error-ratio")
	if run.Status.Phase != analysisv1alpha1.AnalysisPhaseFailed || res.Failed != 1 || !strings.Contains(res.Measurements[0].Value, "0.5") {
		t.Fatalf("a window with the spike: run %s %q, metric %+v", run.Status.Phase, run.Status.Message, res)
	}
}
