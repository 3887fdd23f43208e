// Package podmetrics holds the Prometheus metrics every workload controller keeps of its pods: the operations
// it ran, by result, and how long in-place updates took, each module under its own metric names.
package podmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Op is a pod operation.
type Op string

// The operations counted.
const (
	Create        Op = "create"
	Delete        Op = "delete"
	UpdateInPlace Op = "update_in_place"
)

// Metrics are one workload controller's pod metrics.
type Metrics struct {
	operations *prometheus.CounterVec
	inPlace    prometheus.Histogram
}

// OperationsName and InPlaceName are the metric names of module (e.g. "cloneset").
func OperationsName(module string) string { return "flotilla_" + module + "_pod_operations_total" }

// InPlaceName is the in-place duration histogram's name for module.
func InPlaceName(module string) string {
	return "flotilla_" + module + "_inplace_update_duration_seconds"
}

// New registers module's metrics on controller-runtime's registry, which the manager serves on its metrics
// endpoint; kind names the workload in their help text.
func New(module, kind string) *Metrics {
	m := newMetrics(module, kind)
	metrics.Registry.MustRegister(m.operations, m.inPlace)
	return m
}

// NewOperations registers only the operations counter, for a workload that never updates pods in place.
func NewOperations(module, kind string) *Metrics {
	m := newMetrics(module, kind)
	metrics.Registry.MustRegister(m.operations)
	return m
}

func newMetrics(module, kind string) *Metrics {
	return &Metrics{
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: OperationsName(module),
			Help: "Pods the " + kind + " controller created, deleted or updated, by operation and result (success, failure).",
		}, []string{"operation", "result"}),
		inPlace: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    InPlaceName(module),
			Help:    "Seconds from the start of a " + kind + " pod's in-place update (grace period included) until it is ready again.",
			Buckets: prometheus.ExponentialBuckets(0.25, 2, 12),
		}),
	}
}

// Count counts one operation's outcome.
func (m *Metrics) Count(op Op, err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	m.operations.WithLabelValues(string(op), result).Inc()
}

// ObserveInPlace records an in-place update that began at start (zero: unknown) and finished at end; a clock
// that went backwards records nothing.
func (m *Metrics) ObserveInPlace(start, end time.Time) {
	if !start.IsZero() && end.After(start) {
		m.inPlace.Observe(end.Sub(start).Seconds())
	}
}
