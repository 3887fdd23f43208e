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

// ProgressInterval is the least time between two writes of an object that only report progress: more pods
// updated or ready in the current batch. Every pod of a batch moves those counts; written on each move, a
// batch of hundreds of pods costs as many writes, each waking every watcher of the object. Anything else a
// status says (a batch ready, a phase, a condition) is written at once, so the wait delays no decision.
const ProgressInterval = 5 * time.Second

// ProgressWrites spaces, per object, the writes that only report progress to one per ProgressInterval.
type ProgressWrites struct {
	Timestamps[types.UID]
}

// Hold returns how long a write of the object with uid must wait: zero unless it only reports progress
// (progressOnly) and the last write marked was less than ProgressInterval ago.
func (p *ProgressWrites) Hold(uid types.UID, progressOnly bool, now time.Time) time.Duration {
	last := p.Last(uid)
	if !progressOnly || last.IsZero() {
		return 0
	}
	return max(last.Add(ProgressInterval).Sub(now), 0)
}
