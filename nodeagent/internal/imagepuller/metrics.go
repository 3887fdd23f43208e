package imagepuller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// PullsName is the name of the counter of finished pull tasks.
const PullsName = "flotilla_nodeagent_image_pulls_total"

// pulls counts finished pull tasks by result: succeeded, or the failure's reason (ImageNotFound,
// AuthFailed, Timeout, DeadlineExceeded, PullFailed), which is what an alert wants to tell apart.
var pulls = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: PullsName,
	Help: "Image pull tasks the node agent finished for its NodeImage, by result (succeeded or the failure's reason).",
}, []string{"result"})

// The counter lives on controller-runtime's registry, which the agent serves on /metrics.
func init() { metrics.Registry.MustRegister(pulls) }

func countFinished(t Task) {
	if t.Phase == kruiseappsv1alpha1.ImagePhaseSucceeded {
		pulls.WithLabelValues("succeeded").Inc()
		return
	}
	reason := t.Reason
	if reason == "" {
		reason = ReasonPullFailed
	}
	pulls.WithLabelValues(reason).Inc()
}
