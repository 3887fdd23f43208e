package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Names of the ResourceDistribution controller's metrics and the values of their labels.
const (
	CopyOperationsName           = "flotilla_resourcedistribution_copy_operations_total"
	opCreate, opUpdate, opDelete = "create", "update", "delete"
)

var copyOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: CopyOperationsName,
	Help: "Copies of Secrets and ConfigMaps the ResourceDistribution controller created, updated or deleted, by operation and result (success, failure).",
}, []string{"operation", "result"})

// The metrics live on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(copyOperations) }

func countOperation(op string, err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	copyOperations.WithLabelValues(op, result).Inc()
}
