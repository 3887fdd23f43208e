// Package eventbudget keeps a workload controller's per-pod events from costing one API write per pod when a
// thousand pods move at once. Like client-go's core/v1 event correlator, which kube-controller-manager and
// upstream OpenKruise record through (ten similar events, then one combined), it lets the first events of a
// reason about one object through as they are, naming their pod; later ones within the window are recorded
// without the related pod and without the object's resourceVersion, so the events.k8s.io broadcaster folds
// them into one series: a single Event whose count it keeps, instead of a new Event each.
package eventbudget

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
)

const (
	// DefaultBurst is how many events of one reason about one object keep their related pod: the number
	// of similar events client-go's correlator records before it combines them.
	DefaultBurst = 10
	// DefaultWindow is the correlator's window too.
	DefaultWindow = 10 * time.Minute
	// pruneAbove bounds the tallies kept before expired ones are dropped.
	pruneAbove = 1024
)

// Recorder wraps an events.EventRecorder with the budget.
type Recorder struct {
	events.EventRecorder
	burst  int
	window time.Duration
	clock  clock.PassiveClock

	mu      sync.Mutex
	tallies map[key]*tally
}

type key struct {
	uid    types.UID
	reason string
}

type tally struct {
	since time.Time
	n     int
}

// New wraps inner with DefaultBurst and DefaultWindow on the real clock.
func New(inner events.EventRecorder) *Recorder {
	return NewWithClock(inner, DefaultBurst, DefaultWindow, clock.RealClock{})
}

// NewWithClock wraps inner with the given budget.
func NewWithClock(inner events.EventRecorder, burst int, window time.Duration, c clock.PassiveClock) *Recorder {
	return &Recorder{EventRecorder: inner, burst: burst, window: window, clock: c, tallies: map[key]*tally{}}
}

// Eventf records the event, folding it into its reason's series once the budget is spent. Events without a
// related object are passed on unchanged: they are already one per object and reason.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if related != nil && !r.take(regarding, reason) {
		regarding, related = unversioned(regarding), nil
	}
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// take spends one event of the budget of regarding's reason; false when none is left in this window.
func (r *Recorder) take(regarding runtime.Object, reason string) bool {
	m, err := meta.Accessor(regarding)
	if err != nil {
		return true
	}
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	k := key{uid: m.GetUID(), reason: reason}
	t := r.tallies[k]
	if t == nil || now.Sub(t.since) >= r.window {
		r.prune(now)
		t = &tally{since: now}
		r.tallies[k] = t
	}
	t.n++
	return t.n <= r.burst
}

// prune drops expired tallies once there are many; the caller holds the lock.
func (r *Recorder) prune(now time.Time) {
	if len(r.tallies) < pruneAbove {
		return
	}
	for k, t := range r.tallies {
		if now.Sub(t.since) >= r.window {
			delete(r.tallies, k)
		}
	}
}

// unversioned is a copy of obj without its resourceVersion: the broadcaster keys a series on the whole
// object reference, and the workload's own status writes would otherwise start a new series each.
func unversioned(obj runtime.Object) runtime.Object {
	c := obj.DeepCopyObject()
	if m, err := meta.Accessor(c); err == nil {
		m.SetResourceVersion("")
	}
	return c
}
