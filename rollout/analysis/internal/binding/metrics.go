package binding

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// RunsCreatedName names the counter of the runs the controller created.
const RunsCreatedName = "flotilla_rolloutanalysis_runs_created_total"

var runsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: RunsCreatedName,
	Help: "AnalysisRuns created by RolloutAnalyses, by run (step or background).",
}, []string{"run"})

// The counter lives on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(runsCreated) }

func runKind(step int32) string {
	if step == 0 {
		return "background"
	}
	return "step"
}
