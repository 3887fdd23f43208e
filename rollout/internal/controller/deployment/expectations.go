package deployment

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// expectations remember the ReplicaSet writes of a Deployment until the informer cache shows them, so
// that a reconcile never plans on a cache that misses its own last writes (which could double a
// scale-up). A write that never shows (its ReplicaSet was deleted meanwhile) is forgotten after ttl.
type expectations struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu      sync.Mutex
	pending map[types.NamespacedName]expected
}

// expected are the generations a Deployment's ReplicaSets must reach, by name, and when they were set.
type expected struct {
	generations map[string]int64
	since       time.Time
}

func newExpectations(c clock.PassiveClock, ttl time.Duration) *expectations {
	return &expectations{clock: c, ttl: ttl, pending: map[types.NamespacedName]expected{}}
}

// expect records that the ReplicaSet written for the Deployment key has reached generation.
func (e *expectations) expect(key types.NamespacedName, name string, generation int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.pending[key]
	if !ok {
		exp = expected{generations: map[string]int64{}}
	}
	exp.generations[name] = max(exp.generations[name], generation)
	exp.since = e.clock.Now()
	e.pending[key] = exp
}

// wait is how long the Deployment key should still wait for the cache to show its writes in sets; 0
// when it need not (and the expectations are then dropped).
func (e *expectations) wait(key types.NamespacedName, sets []appsv1.ReplicaSet) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.pending[key]
	if !ok {
		return 0
	}
	left := e.ttl - e.clock.Since(exp.since)
	if left <= 0 || observed(exp.generations, sets) {
		delete(e.pending, key)
		return 0
	}
	return left
}

// forget drops the expectations of a Deployment the controller no longer drives.
func (e *expectations) forget(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, key)
}

func observed(generations map[string]int64, sets []appsv1.ReplicaSet) bool {
	seen := map[string]int64{}
	for i := range sets {
		seen[sets[i].Name] = sets[i].Generation
	}
	for name, generation := range generations {
		if got, ok := seen[name]; !ok || got < generation {
			return false
		}
	}
	return true
}
