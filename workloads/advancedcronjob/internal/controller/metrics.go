package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Names of the AdvancedCronJob controller's metrics.
const (
	JobOperationsName  = "flotilla_advancedcronjob_job_operations_total"
	CreationSkewName   = "flotilla_advancedcronjob_job_creation_skew_seconds"
	opCreate, opDelete = "create", "delete"
)

var (
	jobOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: JobOperationsName,
		Help: "Jobs, BroadcastJobs and ImageListPullJobs the AdvancedCronJob controller created or deleted, by operation and result (success, failure).",
	}, []string{"operation", "result"})
	creationSkew = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    CreationSkewName,
		Help:    "Seconds between the time a run was scheduled for and the creation of its job.",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 12),
	})
)

// The metrics live on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(jobOperations, creationSkew) }

func countOperation(op string, err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	jobOperations.WithLabelValues(op, result).Inc()
}
