package containerrecreate

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// RecreatesName is the name of the counter of finished container recreations.
const RecreatesName = "flotilla_nodeagent_container_recreates_total"

// Results counted by RecreatesName.
const (
	resultSucceeded = "succeeded"
	resultFailed    = "failed"
)

// recreates counts containers whose recreation finished, by result.
var recreates = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: RecreatesName,
	Help: "Containers the node agent finished recreating for ContainerRecreateRequests, by result (succeeded, failed).",
}, []string{"result"})

// The counter lives on controller-runtime's registry, which the agent serves on /metrics.
func init() { metrics.Registry.MustRegister(recreates) }

// countFinished counts the containers that reached Succeeded or Failed between two statuses.
func countFinished(before, after crrStatus) {
	was := map[string]bool{}
	for _, s := range before.ContainerRecreateStates {
		was[s.Name] = s.Phase == phaseSucceeded || s.Phase == phaseFailed
	}
	for _, s := range after.ContainerRecreateStates {
		switch {
		case was[s.Name]:
		case s.Phase == phaseSucceeded:
			recreates.WithLabelValues(resultSucceeded).Inc()
		case s.Phase == phaseFailed:
			recreates.WithLabelValues(resultFailed).Inc()
		}
	}
}
