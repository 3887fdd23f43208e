package batchrelease

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/reconcileutil"
)

// counterInterval is the least time between two status writes that change only the pod counters
// (updatedReplicas, updatedReadyReplicas). Every pod of a batch moves them; written on each move, a batch of
// hundreds of pods costs as many status writes, each waking the Rollout. Any other change is written at once.
const counterInterval = time.Second

// counterWrites remembers when each BatchRelease's status was last written.
type counterWrites struct {
	reconcileutil.Timestamps[types.UID]
}

// hold returns how long to wait before writing st over br's status: zero unless st changes only the pod
// counters and the last write was less than counterInterval ago.
func (c *counterWrites) hold(br *rolloutsv1beta1.BatchRelease, st rolloutsv1beta1.BatchReleaseStatus, now time.Time) time.Duration {
	if !countersOnly(br.Status, st) {
		return 0
	}
	return max(c.Last(br.UID).Add(counterInterval).Sub(now), 0)
}

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
