package batchrelease

import (
	"k8s.io/apimachinery/pkg/api/equality"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/reconcileutil"
)

// counterInterval is the least time between two status writes that change only the pod counters
// (updatedReplicas, updatedReadyReplicas); the Rollout copies them, so it writes no more often either.
const counterInterval = reconcileutil.ProgressInterval

// countersOnly reports whether st differs from old in the pod counters and nowhere else.
func countersOnly(old, st rolloutsv1beta1.BatchReleaseStatus) bool {
	if old.CanaryStatus.UpdatedReplicas == st.CanaryStatus.UpdatedReplicas &&
		old.CanaryStatus.UpdatedReadyReplicas == st.CanaryStatus.UpdatedReadyReplicas {
		return false
	}
	same := *st.DeepCopy()
	same.CanaryStatus.UpdatedReplicas = old.CanaryStatus.UpdatedReplicas
	same.CanaryStatus.UpdatedReadyReplicas = old.CanaryStatus.UpdatedReadyReplicas
	return equality.Semantic.DeepEqual(old, same)
}
