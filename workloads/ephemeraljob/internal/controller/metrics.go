package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Names of the EphemeralJob controller's metrics.
const (
	InjectionsName   = "flotilla_ephemeraljob_injections_total"
	FinishedName     = "flotilla_ephemeraljob_finished_total"
	TTLDeletionsName = "flotilla_ephemeraljob_ttl_deletions_total"
)

var (
	injections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: InjectionsName,
		Help: "Pods the EphemeralJob controller added ephemeral containers to, by result (success, failure).",
	}, []string{"result"})
	finished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: FinishedName,
		Help: "EphemeralJobs that finished, by phase (Succeeded, Failed).",
	}, []string{"phase"})
	ttlDeletions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: TTLDeletionsName,
		Help: "Finished EphemeralJobs deleted once their ttlSecondsAfterFinished passed.",
	})
)

// The metrics live on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(injections, finished, ttlDeletions) }

func countInjection(err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	injections.WithLabelValues(result).Inc()
}
