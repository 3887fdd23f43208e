package terminator

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// RequestsName is the name of the counter of the requests the terminator made to stop sidecars.
const RequestsName = "flotilla_sidecarset_sidecar_terminations_total"

// requests counts the ContainerRecreateRequests created to stop sidecars, by result.
var requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: RequestsName,
	Help: "ContainerRecreateRequests the sidecar terminator created to stop the sidecars of finished job pods, by result (created, failed).",
}, []string{"result"})

// The counter lives on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(requests) }

func countRequest(err error) {
	result := "created"
	if err != nil {
		result = "failed"
	}
	requests.WithLabelValues(result).Inc()
}
