package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Names of the controller's metrics.
const (
	PodOperationsName  = "flotilla_statefulset_pod_operations_total"
	InPlaceSecondsName = "flotilla_statefulset_inplace_update_duration_seconds"
)

// Pod operations counted by PodOperationsName.
const (
	opCreate        = "create"
	opDelete        = "delete"
	opUpdateInPlace = "update_in_place"
)

var (
	// podOperations counts the controller's pod writes that change a pod's life, by operation and result.
	podOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PodOperationsName,
		Help: "Pods the Advanced StatefulSet controller created, deleted or updated in place, by operation and result (success, failure).",
	}, []string{"operation", "result"})
	// inPlaceSeconds observes how long in-place updates took, from the start to the pod's InPlaceUpdateReady.
	inPlaceSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    InPlaceSecondsName,
		Help:    "Seconds from the start of an Advanced StatefulSet pod's in-place update (grace period included) until it is ready again.",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 12),
	})
)

// The metrics live on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(podOperations, inPlaceSeconds) }

// countOperation counts one pod operation's outcome.
func countOperation(op string, err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	podOperations.WithLabelValues(op, result).Inc()
}

// observeInPlace records an in-place update that finished at now and began at start (zero: unknown).
func observeInPlace(start, now time.Time) {
	if !start.IsZero() && now.After(start) {
		inPlaceSeconds.Observe(now.Sub(start).Seconds())
	}
}
