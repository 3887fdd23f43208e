package deletionprotection

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// RefusalsName is the counter of the deletions the module refused.
const RefusalsName = "flotilla_deletion_protection_refusals_total"

var refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: RefusalsName,
	Help: "Deletions refused by policy.kruise.io/delete-protection, by kind and by the label's value (Always, Cascading).",
}, []string{"kind", "protection"})

// The metrics live on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(refusals) }
