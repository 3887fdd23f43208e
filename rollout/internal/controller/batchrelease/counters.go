package batchrelease

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// counterInterval is the least time between two status writes that change only the pod counters
// (updatedReplicas, updatedReadyReplicas). Every pod of a batch moves them; written on each move, a batch of
// hundreds of pods costs as many status writes, each waking the Rollout. Any other change is written at once.
const counterInterval = time.Second

// counterWrites remembers when each BatchRelease's status was last written.
type counterWrites struct {
	mu   sync.Mutex
	last map[types.UID]time.Time
}

func (c *counterWrites) wrote(uid types.UID, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[types.UID]time.Time{}
	}
	c.last[uid] = now
}

func (c *counterWrites) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.last, uid)
}

// hold returns how long to wait before writing st over br's status: zero unless st changes only the pod
// counters and the last write was less than counterInterval ago.
func (c *counterWrites) hold(br *rolloutsv1beta1.BatchRelease, st rolloutsv1beta1.BatchReleaseStatus, now time.Time) time.Duration {
	if !countersOnly(br.Status, st) {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(c.last[br.UID].Add(counterInterval).Sub(now), 0)
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
