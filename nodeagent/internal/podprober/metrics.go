package podprober

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ProbesName is the name of the counter of probes run.
const ProbesName = "flotilla_nodeagent_pod_probes_total"

// probes counts the probes of PodProbeMarkers the agent ran.
var probes = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: ProbesName,
	Help: "Probes of PodProbeMarkers the node agent ran, by handler (exec, httpGet, tcpSocket, unsupported) and result (passed, failed).",
}, []string{"handler", "result"})

// The counter lives on controller-runtime's registry, which the agent serves on /metrics.
func init() { metrics.Registry.MustRegister(probes) }

func handlerType(t Target) string {
	h := t.Probe.ProbeHandler
	switch {
	case h.Exec != nil:
		return "exec"
	case h.HTTPGet != nil:
		return "httpGet"
	case h.TCPSocket != nil:
		return "tcpSocket"
	default:
		return "unsupported"
	}
}

func result(o Outcome) string {
	if o.Passed {
		return "passed"
	}
	return "failed"
}
