package launchpriority

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// OperationsName is the name of the controller's operations counter.
const OperationsName = "flotilla_container_launch_priority_operations_total"

// The operations counted: a barrier key added, a pod marked completed.
const (
	opOpen     = "open_barrier"
	opComplete = "complete"
)

var operations = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: OperationsName,
	Help: "Barrier keys the container launch priority controller added and pods it marked completed, by operation and result (success, failure).",
}, []string{"operation", "result"})

// The metric lives on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(operations) }

func count(op string, err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	operations.WithLabelValues(op, result).Inc()
}
