package control

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/clock"
)

// canaryCreations is shared by every canary control of the process: controls are built per reconcile, the
// memory of a create must outlive them.
var canaryCreations = newCreationExpectations(clock.RealClock{}, time.Minute)

// creationExpectations remembers the canary Deployment created for a release until a list shows it. With
// generateName a second create does not conflict, it makes a second canary; so while a creation is pending
// and the (cached) list does not show it, nothing is created. A creation the cache never shows expires after
// ttl.
type creationExpectations struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu      sync.Mutex
	created map[string]expectedCreation
}

type expectedCreation struct {
	name string
	at   time.Time
}

func newCreationExpectations(c clock.PassiveClock, ttl time.Duration) *creationExpectations {
	return &creationExpectations{clock: c, ttl: ttl, created: map[string]expectedCreation{}}
}

// expect records that name was just created for key.
func (e *creationExpectations) expect(key, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.created[key] = expectedCreation{name: name, at: e.clock.Now()}
}

// observe forgets the creation for key once listed holds it.
func (e *creationExpectations) observe(key string, listed []appsv1.Deployment) {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.created[key]
	if !ok {
		return
	}
	for _, d := range listed {
		if d.Name == exp.name {
			delete(e.created, key)
			return
		}
	}
}

// pending reports whether a creation for key is still unseen and not expired.
func (e *creationExpectations) pending(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.created[key]
	if ok && e.clock.Since(exp.at) > e.ttl {
		delete(e.created, key)
		return false
	}
	return ok
}
