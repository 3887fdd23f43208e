package reconcileutil

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// staleTTL bounds how long an entry of StaleVersions is kept: a cache that does not show a write a minute later
// is broken rather than behind, and an object deleted after the write would otherwise keep its entry forever.
const staleTTL = time.Minute

// StaleVersions is the expectation that the cache will show a controller's own last write of an object: it
// holds the resourceVersion each write replaced. Seeing that version again means the cache lags behind the
// write, and planning from it would repeat side effects (delete a BatchRelease just created, restart a
// release just started) or lose the next write to a conflict. Any other version clears the entry. The event
// of the write itself wakes the object's reconcile once the cache has it, unless the write was settled
// (RecordSettled) and no reconcile waits for it.
type StaleVersions struct {
	mu       sync.Mutex
	replaced map[types.UID]staleEntry
	// now defaults to time.Now.
	now func() time.Time
}

type staleEntry struct {
	version string
	at      time.Time
	// written is the version a settled write made ("" for other writes); waited: a reconcile found the
	// cache stale since, and waits for that version's event.
	written string
	waited  bool
}

// Record notes that a write replaced version replacedVersion of the object with uid, and forgets the entries
// older than staleTTL.
func (s *StaleVersions) Record(uid types.UID, replacedVersion string) {
	s.record(uid, staleEntry{version: replacedVersion})
}

// RecordSettled is Record for a write after which the controller had nothing left to plan: the watch event
// of writtenVersion, the version it made, then brings nothing new, and Echo tells it apart.
func (s *StaleVersions) RecordSettled(uid types.UID, replacedVersion, writtenVersion string) {
	s.record(uid, staleEntry{version: replacedVersion, written: writtenVersion})
}

func (s *StaleVersions) record(uid types.UID, e staleEntry) {
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
	e.at = now
	s.replaced[uid] = e
}

// Stale reports whether obj is the version a write of this controller replaced less than staleTTL ago.
func (s *StaleVersions) Stale(obj client.Object) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.replaced[obj.GetUID()]
	if ok && e.version == obj.GetResourceVersion() && s.clock().Sub(e.at) <= staleTTL {
		e.waited = true
		s.replaced[obj.GetUID()] = e
		return true
	}
	delete(s.replaced, obj.GetUID())
	return false
}

// Echo reports whether obj is the version a settled write made, with no reconcile waiting for it: its
// event need not wake the object's reconcile. The entry stays until a reconcile reads another version.
func (s *StaleVersions) Echo(obj client.Object) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.replaced[obj.GetUID()]
	return ok && e.written != "" && e.written == obj.GetResourceVersion() && !e.waited && s.clock().Sub(e.at) <= staleTTL
}

// DropEchoes filters out the update events Echo tells apart.
func (s *StaleVersions) DropEchoes() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return !s.Echo(e.ObjectNew) }}
}

func (s *StaleVersions) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}
