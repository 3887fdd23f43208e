package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// MarkedPodsName is the name of the controller's metric of pods marked with their budget.
const MarkedPodsName = "flotilla_podunavailablebudget_marked_pods_total"

var markedPods = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: MarkedPodsName,
	Help: "Pods the PodUnavailableBudget controller marked with the related-pub annotation of their budget, by result (success, failure).",
}, []string{"result"})

// The metric lives on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(markedPods) }

func countMarked(err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	markedPods.WithLabelValues(result).Inc()
}
