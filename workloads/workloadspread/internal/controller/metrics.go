package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric names of the module.
const (
	DeletionCostsName = "flotilla_workloadspread_deletion_cost_updates_total"
	PodsSpreadName    = "flotilla_workloadspread_pods_spread_total"
)

var (
	deletionCosts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: DeletionCostsName,
		Help: "Pod deletion-cost annotations the WorkloadSpread controller set, by result (success, failure).",
	}, []string{"result"})
	podsSpread = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PodsSpreadName,
		Help: "New pods the WorkloadSpread pod webhook saw, by outcome (matched, full, refused).",
	}, []string{"outcome"})
)

// The metrics live on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(deletionCosts, podsSpread) }

func countCost(err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	deletionCosts.WithLabelValues(result).Inc()
}

// CountSpread counts one pod the webhook saw: matched to a subset, left alone because every subset was
// full, or refused.
func CountSpread(outcome string) { podsSpread.WithLabelValues(outcome).Inc() }
