package guard

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podunavailablebudget/internal/plan"
)

// Names of the guard's metric and the values of its result label.
const (
	DisruptionsName                                     = "flotilla_podunavailablebudget_pod_disruptions_total"
	resultExempt, resultAdmitted, resultRefused, failed = "exempt", "admitted", "refused", "error"
)

var disruptions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: DisruptionsName,
	Help: "Pod updates, deletions and evictions held to their PodUnavailableBudget, by operation (UPDATE, DELETE, EVICT) and " +
		"result (exempt: no budget counts it; admitted: recorded against its budget; refused; error: the budget could not be read or written).",
}, []string{"operation", "result"})

// The metric lives on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(disruptions) }

func countDisruption(op kruisepolicyv1alpha1.PubOperation, d plan.Decision, err error) {
	disruptions.WithLabelValues(string(op), result(d, err)).Inc()
}

func result(d plan.Decision, err error) string {
	switch {
	case err != nil:
		return failed
	case d.Verdict == plan.Exempt:
		return resultExempt
	case d.Verdict == plan.Admit:
		return resultAdmitted
	}
	return resultRefused
}
