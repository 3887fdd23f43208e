package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// PodOperationsName names the BroadcastJob controller's pod operations counter.
const PodOperationsName = "flotilla_broadcastjob_pod_operations_total"

// Pod operations counted by PodOperationsName.
const (
	opCreate = "create"
	opDelete = "delete"
)

var podOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: PodOperationsName,
	Help: "Pods the BroadcastJob controller created or deleted, by operation and result (success, failure).",
}, []string{"operation", "result"})

// The counter lives on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(podOperations) }

func countOperation(op string, err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	podOperations.WithLabelValues(op, result).Inc()
}
