package reconcileutil

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Timestamps remembers one time per key in memory: when an object's routes last changed, when its status was
// last written. Keeping it in status would cost a write each time; after a restart it starts empty. The zero
// value is ready to use.
type Timestamps[K comparable] struct {
	mu   sync.Mutex
	last map[K]time.Time
}

// Mark records at for k.
func (s *Timestamps[K]) Mark(k K, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[K]time.Time{}
	}
	s.last[k] = at
}

// Last is the time marked for k (zero: none since this process started).
func (s *Timestamps[K]) Last(k K) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[k]
}

// Forget drops k.
func (s *Timestamps[K]) Forget(k K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.last, k)
}

// NetworkChanges remembers when each object's routes were last changed, so they count as in place only a
// grace period later.
type NetworkChanges = Timestamps[types.UID]
