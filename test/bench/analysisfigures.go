package bench

import (
	"fmt"
	"math"
)

// The manager's analysis metrics (rollout/analysis/internal/controller/metrics.go).
const (
	measurementsMetric        = "flotilla_analysis_measurements_total"
	measurementDurationMetric = "flotilla_analysis_measurement_duration_seconds"
)

var prometheusProvider = map[string]string{"provider": "prometheus"}

// analysisCounters are read around each window of analysis-overhead, in the order of the rise* indices.
var analysisCounters = []counterSpec{
	{"measurements", measurementsMetric, prometheusProvider},
	{"measurements Successful", measurementsMetric, map[string]string{"provider": "prometheus", "phase": "Successful"}},
	{"query seconds", measurementDurationMetric + "_sum", prometheusProvider},
	{"queries", measurementDurationMetric + "_count", prometheusProvider},
	{"AnalysisRun reconciles", reconcileTotal, map[string]string{"controller": "analysisrun-controller"}},
	{"RolloutAnalysis reconciles", reconcileTotal, map[string]string{"controller": "rolloutanalysis-controller"}},
	{"Rollout reconciles", reconcileTotal, map[string]string{"controller": "rollout-controller"}},
}

const (
	riseMeasurements = iota
	riseSuccessful
	riseQuerySeconds
	riseQueries
	riseRunReconciles
	riseBindingReconciles
	riseRolloutReconciles
)

// overheadWindow is one measured window of analysis-overhead.
type overheadWindow struct {
	phase Phase
	// counters are the rises of analysisCounters over the window.
	counters []float64
	// latency is the rise of the Prometheus provider's measurement-duration buckets.
	latency []bucket
}

func (w overheadWindow) rise(i int) float64 {
	if i < len(w.counters) {
		return w.counters[i]
	}
	return 0
}

// expectedMeasurements is about how many measurements the runs take in a window: one per run per interval, a
// little fewer since the interval runs from the end of one measurement to the start of the next.
func expectedMeasurements() float64 {
	return float64(analysisRollouts) * math.Floor(analysisWindow.Seconds()/analysisInterval.Seconds())
}

// addAnalysisOverheadMetrics compares the window with analysis against the one without: the manager's CPU and
// peak RSS, what the analysis measured, and the latency of its queries. running is how many runs were still
// Running after the window.
func addAnalysisOverheadMetrics(res *Result, without, with overheadWindow, running int) {
	base, m := without.phase.Usage[ManagerName], with.phase.Usage[ManagerName]
	promBase, prom := without.phase.Usage[PrometheusName], with.phase.Usage[PrometheusName]
	res.Add(
		Metric{Name: "manager CPU without analysis", Unit: UnitCores, Value: base.Cores,
			Note: fmt.Sprintf("%d Rollouts paused at step 1, %.0f s; %s", analysisRollouts, analysisWindow.Seconds(), usageNote(ManagerName, base))},
		Metric{Name: "manager CPU with analysis", Unit: UnitCores, Value: m.Cores,
			Note: usageNote(ManagerName, m)}.Compared("without analysis", base.Cores),
		Metric{Name: "manager CPU added by analysis", Unit: UnitCores, Value: m.Cores - base.Cores, Note: cpuTargetNote(base)}.
			WithTarget(analysisCPUTarget),
		Metric{Name: "manager peak RSS without analysis", Unit: UnitBytes, Value: float64(base.PeakRSSBytes)},
		Metric{Name: "manager peak RSS with analysis", Unit: UnitBytes, Value: float64(m.PeakRSSBytes)}.
			Compared("without analysis", float64(base.PeakRSSBytes)),
		Metric{Name: "manager RSS added by analysis", Unit: UnitBytes, Value: float64(m.PeakRSSBytes) - float64(base.PeakRSSBytes),
			Note: "peak with analysis - peak without, each over its window; target +20 MiB"}.WithTarget(analysisRSSTarget),
		Metric{Name: "manager API writes without analysis", Unit: UnitCount, Value: float64(writes(without.phase.Requests))},
	)
	addAnalysisWork(res, with, running)
	res.Add(Metric{Name: "prometheus CPU with analysis", Unit: UnitCores, Value: prom.Cores,
		Note: "the server itself: 1 s scrapes plus the manager's queries"}.Compared("without analysis", promBase.Cores))
}

// cpuTargetNote says how the "+5 % CPU" is read: as 5% of one core, the unit the table shows. Read as
// 5% of the baseline, the bound would be a few CPU ticks at most over the window for a manager idling near 0.
func cpuTargetNote(base Usage) string {
	return fmt.Sprintf("with - without; target +5%% of one core (5%% of the baseline's %.2f CPU s would be %.3f CPU s over the window)",
		base.CPUSeconds, 0.05*base.CPUSeconds)
}

// addAnalysisWork reports what the analysis did in its window: measurements, their outcome, the queries'
// latency and the reconciles behind them.
func addAnalysisWork(res *Result, with overheadWindow, running int) {
	measured := with.rise(riseMeasurements)
	res.Add(
		Metric{Name: "measurements in the window", Unit: UnitCount, Value: measured,
			Note: fmt.Sprintf("about %.0f expected: %d runs, one every %v", expectedMeasurements(), analysisRollouts, analysisInterval)},
		Metric{Name: "measurements not Successful", Unit: UnitCount, Value: measured - with.rise(riseSuccessful)}.WithTarget(0),
		Metric{Name: "AnalysisRuns still Running after the window", Unit: UnitCount, Value: float64(running),
			Note: fmt.Sprintf("of %d", analysisRollouts)},
	)
	// No query in the window leaves no latency to report (and NaN has no JSON).
	if queries := with.rise(riseQueries); queries > 0 {
		histogram := measurementDurationMetric + `{provider="prometheus"} over the window, interpolated within its buckets ` +
			"(5, 10, 25, 50 ms, ...)"
		res.Add(
			Metric{Name: "query latency p50", Unit: UnitMilliseconds, Value: 1000 * bucketQuantile(0.5, with.latency), Note: histogram},
			Metric{Name: "query latency p99", Unit: UnitMilliseconds, Value: 1000 * bucketQuantile(0.99, with.latency), Note: histogram},
			Metric{Name: "query latency mean", Unit: UnitMilliseconds, Value: 1000 * with.rise(riseQuerySeconds) / queries,
				Note: fmt.Sprintf("the histogram's sum / count, %.0f queries", queries)},
		)
	}
	res.Add(
		Metric{Name: "AnalysisRun reconciles", Unit: UnitCount, Value: with.rise(riseRunReconciles)},
		Metric{Name: "RolloutAnalysis reconciles", Unit: UnitCount, Value: with.rise(riseBindingReconciles)},
		Metric{Name: "Rollout reconciles", Unit: UnitCount, Value: with.rise(riseRolloutReconciles)},
	)
}
