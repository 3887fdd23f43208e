package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Names of the DaemonSet controller's metrics.
const (
	PodOperationsName  = "flotilla_daemonset_pod_operations_total"
	InPlaceSecondsName = "flotilla_daemonset_inplace_update_duration_seconds"
)

// Pod operations counted by PodOperationsName.
const (
	opCreate        = "create"
	opDelete        = "delete"
	opUpdateInPlace = "update_in_place"
)

var (
	podOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PodOperationsName,
		Help: "Pods the Advanced DaemonSet controller created, deleted or updated in place, by operation and result (success, failure).",
	}, []string{"operation", "result"})
	inPlaceSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    InPlaceSecondsName,
		Help:    "Seconds from the start of a daemon pod's in-place update until it is ready again.",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 12),
	})
)

// The metrics live on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(podOperations, inPlaceSeconds) }

func countOperation(op string, err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	podOperations.WithLabelValues(op, result).Inc()
}
