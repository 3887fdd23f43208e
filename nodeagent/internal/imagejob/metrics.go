package imagejob

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/imagejob/plan"
)

// Names of the ImagePullJob controller's metrics and the values of their labels.
const (
	FinishedName                 = "flotilla_imagepulljob_finished_total"
	NodeImageUpdatesName         = "flotilla_imagepulljob_nodeimage_updates_total"
	SecretOperationsName         = "flotilla_imagepulljob_secret_copy_operations_total"
	resultSucceeded              = "succeeded"
	resultFailed                 = "failed"
	resultDeadline               = "deadline_exceeded"
	opCreate, opUpdate, opDelete = "create", "update", "delete"
)

var (
	finished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: FinishedName,
		Help: "ImagePullJobs that finished, by result: succeeded (every node pulled), failed (some node failed) or deadline_exceeded.",
	}, []string{"result"})
	nodeImageUpdates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NodeImageUpdatesName,
		Help: "NodeImage writes of the ImagePullJob controller (tags added or taken back), by result (success, conflict, failure).",
	}, []string{"result"})
	secretOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: SecretOperationsName,
		Help: "Copies of pull secrets the ImagePullJob controller created, updated or deleted for the node agents, by operation and result (success, failure).",
	}, []string{"operation", "result"})
)

// The metrics live on controller-runtime's registry, which the manager serves on its metrics endpoint.
func init() { metrics.Registry.MustRegister(finished, nodeImageUpdates, secretOperations) }

func countFinished(d plan.Decision) {
	result := resultSucceeded
	switch {
	case hasReason(d.Events, plan.ReasonDeadlineExceeded):
		result = resultDeadline
	case d.Status.Failed > 0:
		result = resultFailed
	}
	finished.WithLabelValues(result).Inc()
}

func hasReason(events []plan.Event, reason string) bool {
	for _, e := range events {
		if e.Reason == reason {
			return true
		}
	}
	return false
}

func countNodeImageUpdate(err error) {
	nodeImageUpdates.WithLabelValues(writeResult(err)).Inc()
}

func countSecretOperation(op string, err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	secretOperations.WithLabelValues(op, result).Inc()
}
