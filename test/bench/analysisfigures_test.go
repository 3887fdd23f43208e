package bench

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func overheadUsage(cpu float64, rss uint64) Usage {
	return Usage{CPUSeconds: cpu, WallSeconds: 60, Cores: cpu / 60, PeakRSSBytes: rss}
}

func TestAnalysisOverheadMetrics(t *testing.T) {
	without := overheadWindow{phase: Phase{ManagerRunning: true, Usage: map[string]Usage{
		ManagerName: overheadUsage(0.12, 60<<20), PrometheusName: overheadUsage(1.2, 90<<20)}}}
	with := overheadWindow{
		phase: Phase{ManagerRunning: true, Usage: map[string]Usage{
			ManagerName: overheadUsage(1.92, 70<<20), PrometheusName: overheadUsage(2.4, 95<<20)}},
		counters: make([]float64, len(analysisCounters)),
		latency:  []bucket{{0.005, 500}, {0.01, 590}, {0.025, 596}, {math.Inf(1), 596}},
	}
	with.counters[riseMeasurements], with.counters[riseSuccessful] = 596, 595
	with.counters[riseQueries], with.counters[riseQuerySeconds] = 596, 1.788
	res := &Result{}
	addAnalysisOverheadMetrics(res, without, with, 100)
	res.finish()

	added := metricNamed(t, *res, "manager CPU added by analysis")
	if math.Abs(added.Value-0.03) > 1e-12 || added.Met == nil || !*added.Met {
		t.Errorf("CPU added %+v, want 0.03 cores, met", added)
	}
	if !strings.Contains(added.Note, "0.12 CPU s would be 0.006 CPU s") {
		t.Errorf("CPU note %q", added.Note)
	}
	if cpu := metricNamed(t, *res, "manager CPU with analysis"); cpu.Ratio == nil || math.Abs(*cpu.Ratio-16) > 1e-9 {
		t.Errorf("CPU with analysis %+v, want 16x the baseline", cpu)
	}
	if rss := metricNamed(t, *res, "manager RSS added by analysis"); rss.Value != 10<<20 || !*rss.Met {
		t.Errorf("RSS added %+v, want 10 MiB, met", rss)
	}
	if m := metricNamed(t, *res, "measurements not Successful"); m.Value != 1 || *m.Met {
		t.Errorf("not Successful %+v, want 1, missed", m)
	}
	if m := metricNamed(t, *res, "measurements in the window"); !strings.HasPrefix(m.Note, "about 600 expected") {
		t.Errorf("measurements note %q", m.Note)
	}
	// Rank 590.04 of 596 falls in (10, 25] ms, which holds 6: 10 + 15 * 0.04/6 ms.
	if p99 := metricNamed(t, *res, "query latency p99"); math.Abs(p99.Value-10.1) > 1e-9 {
		t.Errorf("p99 %v ms, want 10.1", p99.Value)
	}
	if mean := metricNamed(t, *res, "query latency mean"); math.Abs(mean.Value-3) > 1e-9 {
		t.Errorf("mean %v ms, want 3", mean.Value)
	}
	if prom := metricNamed(t, *res, "prometheus CPU with analysis"); prom.Ratio == nil || *prom.Ratio != 2 {
		t.Errorf("prometheus %+v", prom)
	}
}

func TestAnalysisOverheadWithoutQueries(t *testing.T) {
	empty := overheadWindow{phase: Phase{Usage: map[string]Usage{}}}
	res := &Result{}
	addAnalysisOverheadMetrics(res, empty, empty, 0)
	res.finish()
	for _, m := range res.Metrics {
		if strings.HasPrefix(m.Name, "query latency") {
			t.Errorf("latency reported without a query: %+v", m)
		}
	}
	if _, err := json.Marshal(res); err != nil {
		t.Errorf("results without a query do not encode: %v", err)
	}
}

func TestAnalysisCountersMatchTheirIndices(t *testing.T) {
	var after []Sample
	for i, spec := range analysisCounters {
		after = append(after, Sample{Name: spec.Metric, Labels: spec.Labels, Value: float64(10 * (i + 1))})
	}
	w := overheadWindow{counters: counterRises(analysisCounters, nil, after)}
	// measurements also counts the Successful series, which carries its provider.
	for i, want := range map[int]float64{riseMeasurements: 30, riseSuccessful: 20, riseQuerySeconds: 30, riseQueries: 40,
		riseRunReconciles: 50, riseBindingReconciles: 60, riseRolloutReconciles: 70} {
		if got := w.rise(i); got != want {
			t.Errorf("rise %d (%s) = %v, want %v", i, analysisCounters[i].Name, got, want)
		}
	}
	if (overheadWindow{}).rise(riseQueries) != 0 {
		t.Error("a window without readings must rise by nothing")
	}
}

func TestAnalysisOverheadObjects(t *testing.T) {
	ro := pausedRollout(7)
	steps := ro.Spec.Strategy.Canary.Steps
	if ro.Name != "app-0007" || ro.Spec.WorkloadRef.Name != "app-0007" || len(steps) != 2 || steps[0].Pause.Duration != nil {
		t.Errorf("Rollout %+v: the first step must wait for approval", ro)
	}
	paused := &rolloutsv1beta1.Rollout{Status: rolloutsv1beta1.RolloutStatus{Phase: rolloutsv1beta1.RolloutPhaseProgressing,
		CurrentStepIndex: 1, CurrentStepState: rolloutsv1beta1.CanaryStepStatePaused}}
	if !releasePaused(paused) {
		t.Error("a release paused at step 1 is not seen as paused")
	}
	paused.Status.CurrentStepState = rolloutsv1beta1.CanaryStepStateUpgrade
	if releasePaused(paused) {
		t.Error("a release upgrading step 1 is seen as paused")
	}
	m := errorRatioTemplate("http://127.0.0.1:9090").Spec.Metrics[0]
	if m.Count != 0 || m.Interval.Duration != 10*time.Second || m.Provider.Prometheus == nil ||
		m.Provider.Prometheus.Query != `max(bench_error_ratio{app="{{args.rollout}}"})` {
		t.Errorf("metric %+v", m)
	}
	if ra := backgroundAnalysis(7); ra.Spec.RolloutRef.Name != "app-0007" || ra.Spec.Background == nil || len(ra.Spec.Steps) != 0 {
		t.Errorf("RolloutAnalysis %+v", ra)
	}
	size := clusterSize(analysisOverhead())
	if size.Nodes*size.PodsPerNode < analysisRollouts*(analysisReplicas+1) || !size.ControllerManager || !size.Scheduler {
		t.Errorf("cluster %+v cannot hold the releases' pods", size)
	}
}

func TestServeErrorRatios(t *testing.T) {
	addr, stop, err := serveErrorRatios()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/metrics") //nolint:noctx // a test reading its own server
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	samples, err := ParseText(strings.NewReader(string(body)))
	if err != nil || len(samples) != analysisRollouts {
		t.Fatalf("%d samples, %v", len(samples), err)
	}
	if s := samples[analysisRollouts-1]; s.Name != analysisGauge || s.Labels["app"] != "app-0099" || s.Value != 0.01 {
		t.Errorf("last sample %+v", s)
	}
}
