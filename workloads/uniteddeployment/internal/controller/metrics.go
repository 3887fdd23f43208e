package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Names of the UnitedDeployment controller's metrics and the values of their labels.
const (
	SubsetOperationsName         = "flotilla_uniteddeployment_subset_operations_total"
	opCreate, opUpdate, opDelete = "create", "update", "delete"
)

var subsetOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: SubsetOperationsName,
	Help: "Subset workloads the UnitedDeployment controller created, updated or deleted, by operation and result (success, failure).",
}, []string{"operation", "result"})

// The metrics live on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(subsetOperations) }

func countOperation(op string, err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	subsetOperations.WithLabelValues(op, result).Inc()
}
