package batchrelease

import (
	"k8s.io/apimachinery/pkg/api/equality"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// countersOnly reports whether st differs from old in the pod counters (updatedReplicas, updatedReadyReplicas)
// and nowhere else: such a write waits for reconcileutil.ProgressInterval since the last one (the Rollout copies
// the counters, so it writes no more often either).
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
