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

// ProgressBudget is how many progress-only writes a second a controller spends on all its objects together. With
// more objects in motion than ProgressInterval allows at that rate, each one's interval grows (a thousand
// releases at once: 50 s each): at fleet scale those writes, each waking every watcher, otherwise took the API
// server from the releases themselves.
const ProgressBudget = 20

// inMotion is how recent an object's last write must be for it to count as in motion.
const inMotion = time.Minute

// ProgressWrites spaces, per object, the writes that only report progress to one per interval (interval).
type ProgressWrites struct {
	Timestamps[types.UID]
	// moving is the number of objects in motion, counted at countedAt.
	moving    int
	countedAt time.Time
}

// Hold returns how long a write of the object with uid must wait: zero unless it only reports progress
// (progressOnly) and the last write marked was less than an interval ago.
func (p *ProgressWrites) Hold(uid types.UID, progressOnly bool, now time.Time) time.Duration {
	last := p.Last(uid)
	if !progressOnly || last.IsZero() {
		return 0
	}
	return max(last.Add(p.interval(now)).Sub(now), 0)
}

// interval is ProgressInterval, stretched so that the objects in motion (a write marked within inMotion)
// share ProgressBudget writes a second. They are counted at most once a second.
func (p *ProgressWrites) interval(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.countedAt.IsZero() || now.Sub(p.countedAt) >= time.Second {
		p.moving, p.countedAt = 0, now
		for _, at := range p.last {
			if now.Sub(at) < inMotion {
				p.moving++
			}
		}
	}
	return max(ProgressInterval, time.Duration(p.moving)*time.Second/ProgressBudget)
}
