// Package expectations remembers a controller's own writes to the objects it owns until the informer
// cache shows them, so that a reconcile never plans on a cache that misses them (which would create a pod
// twice, delete one twice, or update one twice). A write the cache never shows is forgotten after a TTL.
package expectations

import (
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Expectations holds the pending writes of every owner.
type Expectations struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu      sync.Mutex
	pending map[types.NamespacedName]*writes
}

type writes struct {
	created map[string]bool
	deleted map[types.UID]bool
	// updated maps an object name to the resourceVersion the write produced.
	updated map[string]string
	since   time.Time
}

// New returns empty expectations with the given clock and TTL.
func New(c clock.PassiveClock, ttl time.Duration) *Expectations {
	return &Expectations{clock: c, ttl: ttl, pending: map[types.NamespacedName]*writes{}}
}

func (e *Expectations) entry(owner types.NamespacedName) *writes {
	w, ok := e.pending[owner]
	if !ok {
		w = &writes{created: map[string]bool{}, deleted: map[types.UID]bool{}, updated: map[string]string{}}
		e.pending[owner] = w
	}
	w.since = e.clock.Now()
	return w
}

// Created records that owner created an object named name.
func (e *Expectations) Created(owner types.NamespacedName, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entry(owner).created[name] = true
}

// Deleted records that owner deleted (or started deleting) the object with uid.
func (e *Expectations) Deleted(owner types.NamespacedName, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entry(owner).deleted[uid] = true
}

// Updated records that owner wrote the object name, which now has resourceVersion.
func (e *Expectations) Updated(owner types.NamespacedName, name, resourceVersion string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entry(owner).updated[name] = resourceVersion
}

// Wait reports how long owner should still wait for the cache to show its writes in objs (what the cache
// lists for it now); 0 when it need not, and the expectations are then dropped.
func Wait[T metav1.Object](e *Expectations, owner types.NamespacedName, objs []T) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	w, ok := e.pending[owner]
	if !ok {
		return 0
	}
	left := e.ttl - e.clock.Since(w.since)
	if left <= 0 || observed(w, objs) {
		delete(e.pending, owner)
		return 0
	}
	return left
}

// WaitFor is Wait for a list's items (values, as typed lists hold them).
func WaitFor[T any, PT interface {
	*T
	metav1.Object
}](e *Expectations, owner types.NamespacedName, items []T) time.Duration {
	objs := make([]PT, len(items))
	for i := range items {
		objs[i] = PT(&items[i])
	}
	return Wait(e, owner, objs)
}

// Forget drops the expectations of an owner that is gone.
func (e *Expectations) Forget(owner types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, owner)
}

func observed[T metav1.Object](w *writes, objs []T) bool {
	names := map[string]metav1.Object{}
	uids := map[types.UID]metav1.Object{}
	for _, o := range objs {
		names[o.GetName()], uids[o.GetUID()] = o, o
	}
	for name := range w.created {
		if names[name] == nil {
			return false
		}
	}
	for uid := range w.deleted {
		if o := uids[uid]; o != nil && o.GetDeletionTimestamp() == nil {
			return false
		}
	}
	for name, rv := range w.updated {
		if o := names[name]; o != nil && !atLeast(o.GetResourceVersion(), rv) {
			return false
		}
	}
	return true
}

// atLeast compares resourceVersions as the integers etcd makes them; opaque ones must match exactly.
func atLeast(have, want string) bool {
	h, errH := strconv.ParseUint(have, 10, 64)
	w, errW := strconv.ParseUint(want, 10, 64)
	if errH != nil || errW != nil {
		return have == want
	}
	return h >= w
}
