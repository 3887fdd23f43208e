package reconcileutil

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// NetworkChanges remembers when each object's routes were last changed, so they count as in place only a grace
// period later. It lives in memory because recording it in status would cost a write per change; after a
// restart the first change waits its grace period again. The zero value is ready to use.
type NetworkChanges struct {
	mu   sync.Mutex
	last map[types.UID]time.Time
}

// Changed records a change of uid's routes at at.
func (n *NetworkChanges) Changed(uid types.UID, at time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.last == nil {
		n.last = map[types.UID]time.Time{}
	}
	n.last[uid] = at
}

// LastChange is when uid's routes were last changed (zero: not since this process started).
func (n *NetworkChanges) LastChange(uid types.UID) time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last[uid]
}

// Forget drops an object whose routing is over.
func (n *NetworkChanges) Forget(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.last, uid)
}
