package containermeta

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// RestartsName is the name of the counter of containers stopped for new metadata values.
const RestartsName = "flotilla_nodeagent_metadata_env_restarts_total"

// restarts counts the containers stopped so that their env reads the pod's new labels and annotations.
var restarts = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: RestartsName,
	Help: "Containers the node agent stopped so that their env reads the pod's new labels and annotations, by result (succeeded, failed).",
}, []string{"result"})

// The counter lives on controller-runtime's registry, which the agent serves on /metrics.
func init() { metrics.Registry.MustRegister(restarts) }
