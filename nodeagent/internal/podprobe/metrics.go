package podprobe

import (
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Names of the pod probe controllers' metrics and the values of their labels.
const (
	NodePodProbeUpdatesName = "flotilla_nodepodprobe_spec_updates_total"
	PodPatchesName          = "flotilla_nodepodprobe_pod_patches_total"
	partMetadata            = "metadata"
	partCondition           = "condition"
)

var (
	nodePodProbeUpdates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NodePodProbeUpdatesName,
		Help: "NodePodProbe spec writes, by controller (podprobemarker: a marker's probes written or taken back; nodepodprobe: the entries of gone pods dropped) and result (success, conflict, failure).",
	}, []string{"controller", "result"})
	podPatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PodPatchesName,
		Help: "Pod writes of the NodePodProbe controller from the node agents' probe results, by part (metadata: the marker policies' labels and annotations; condition: the probes' pod conditions) and result (success, failure).",
	}, []string{"part", "result"})
)

// The metrics live on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(nodePodProbeUpdates, podPatches) }

func countSpecUpdate(controller string, err error) {
	result := "success"
	switch {
	case apierrors.IsConflict(err):
		result = "conflict"
	case err != nil:
		result = "failure"
	}
	nodePodProbeUpdates.WithLabelValues(controller, result).Inc()
}

func countPodPatch(part string, err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	podPatches.WithLabelValues(part, result).Inc()
}
