package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Names of the AnalysisRun controller's metrics.
const (
	RunsName                = "flotilla_analysis_runs_total"
	MeasurementsName        = "flotilla_analysis_measurements_total"
	MeasurementDurationName = "flotilla_analysis_measurement_duration_seconds"
)

var (
	runs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: RunsName,
		Help: "AnalysisRuns that reached their final phase, by phase (Successful, Failed, Inconclusive, Error).",
	}, []string{"phase"})
	measurements = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MeasurementsName,
		Help: "Finished measurements recorded by AnalysisRuns, by provider (prometheus, web, job) and phase.",
	}, []string{"provider", "phase"})
	measurementDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MeasurementDurationName,
		Help:    "Time one call to a measurement provider took (a query, a request, a Job created or looked at), by provider.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, []string{"provider"})
)

// The metrics live on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(runs, measurements, measurementDuration) }
