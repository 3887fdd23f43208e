package reconcileutil

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StaleVersions is the expectation that the cache will show a controller's own last write of an object: it
// holds the resourceVersion each write replaced. Seeing that version again means the cache lags behind the
// write, and planning from it would repeat side effects (delete a BatchRelease just created, restart a
// release just started) or lose the next write to a conflict. Any other version clears the entry. The event
// of the write itself wakes the object's reconcile once the cache has it.
type StaleVersions struct {
	mu       sync.Mutex
	replaced map[types.UID]string
}

// Record notes that a write replaced version replacedVersion of the object with uid.
func (s *StaleVersions) Record(uid types.UID, replacedVersion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replaced == nil {
		s.replaced = map[types.UID]string{}
	}
	s.replaced[uid] = replacedVersion
}

// Stale reports whether obj is the version a write of this controller already replaced.
func (s *StaleVersions) Stale(obj client.Object) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.replaced[obj.GetUID()]
	if ok && v == obj.GetResourceVersion() {
		return true
	}
	delete(s.replaced, obj.GetUID())
	return false
}
