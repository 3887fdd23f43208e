package reconcileutil

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// staleTTL bounds how long an entry of StaleVersions is kept: a cache that does not show a write a minute later
// is broken rather than behind, and an object deleted after the write would otherwise keep its entry forever.
const staleTTL = time.Minute

// StaleVersions is the expectation that the cache will show a controller's own last write of an object: it
// holds the resourceVersion each write replaced. Seeing that version again means the cache lags behind the
// write, and planning from it would repeat side effects (delete a BatchRelease just created, restart a
// release just started) or lose the next write to a conflict. Any other version clears the entry. The event
// of the write itself wakes the object's reconcile once the cache has it.
type StaleVersions struct {
	mu       sync.Mutex
	replaced map[types.UID]staleEntry
	// now defaults to time.Now.
	now func() time.Time
}

type staleEntry struct {
	version string
	at      time.Time
}

// Record notes that a write replaced version replacedVersion of the object with uid, and forgets the entries
// older than staleTTL.
func (s *StaleVersions) Record(uid types.UID, replacedVersion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if s.replaced == nil {
		s.replaced = map[types.UID]staleEntry{}
	}
	for k, e := range s.replaced {
		if now.Sub(e.at) > staleTTL {
			delete(s.replaced, k)
		}
	}
	s.replaced[uid] = staleEntry{version: replacedVersion, at: now}
}

// Stale reports whether obj is the version a write of this controller replaced less than staleTTL ago.
func (s *StaleVersions) Stale(obj client.Object) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.replaced[obj.GetUID()]
	if ok && e.version == obj.GetResourceVersion() && s.clock().Sub(e.at) <= staleTTL {
		return true
	}
	delete(s.replaced, obj.GetUID())
	return false
}

func (s *StaleVersions) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}
