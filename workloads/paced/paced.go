// Package paced enqueues reconcile requests from frequent events, such as those of the pods a controller
// counts, at most once per interval each: the first event of a burst reconciles at once, the rest of the
// burst in one reconcile an interval later. A reconcile reads the cache when it runs, so one that is still
// to come covers every event before it; nothing is lost, only folded.
package paced

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/workloads/controllerref"
)

// Queue is a controller's work queue.
type Queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Pacer remembers, per request, when it was last let into the queue.
type Pacer struct {
	interval time.Duration
	clock    clock.PassiveClock

	mu sync.Mutex
	// last is when each request last entered, or is due to enter, the queue.
	last      map[reconcile.Request]time.Time
	lastSweep time.Time
}

// New paces requests to one per interval; a nil clock is the real one.
func New(interval time.Duration, c clock.PassiveClock) *Pacer {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Pacer{interval: interval, clock: c, last: map[reconcile.Request]time.Time{}}
}

// Add lets req into q now or later. A request already due later is added again for that time: a queue that
// keeps one entry per request (controller-runtime's priority queue) lets an Add from elsewhere run it early,
// before this event, and the entry that was to cover it is gone.
func (p *Pacer) Add(q Queue, req reconcile.Request) {
	q.AddAfter(req, p.schedule(req))
}

// schedule decides how soon req enters the queue: when it is already due, then; else now if it has not
// entered in the last interval, or an interval after it last did.
func (p *Pacer) schedule(req reconcile.Request) time.Duration {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sweep(now)
	last, seen := p.last[req]
	switch {
	case seen && now.Before(last):
		return last.Sub(now)
	case seen && now.Before(last.Add(p.interval)):
		due := last.Add(p.interval)
		p.last[req] = due
		return due.Sub(now)
	default:
		p.last[req] = now
		return 0
	}
}

// sweep forgets, now and then, the requests whose interval has passed: they would enter at once anyway.
func (p *Pacer) sweep(now time.Time) {
	if now.Sub(p.lastSweep) < 16*p.interval {
		return
	}
	p.lastSweep = now
	for req, last := range p.last {
		if !now.Before(last.Add(p.interval)) {
			delete(p.last, req)
		}
	}
}

// OwnedPodInterval paces the reconciles the events of a workload's own pods ask for. A scale-up of 1,000 pods
// sends thousands of events (created, scheduled, running, ready) and each reconcile reads and checks every pod
// of the workload; at most ten a second keep a workload's status within a tenth of a second of its pods.
const OwnedPodInterval = 100 * time.Millisecond

// OwnedPods enqueues, paced by OwnedPodInterval, the workload of kind gk that controls a pod.
func OwnedPods(gk schema.GroupKind) handler.EventHandler {
	return New(OwnedPodInterval, nil).Handler(ControllerOf(gk))
}

// ControllerOf maps an object to the object of kind gk that controls it (its controller reference), in its
// namespace; to nothing when another kind, or none, controls it.
func ControllerOf(gk schema.GroupKind) handler.MapFunc {
	return func(_ context.Context, obj client.Object) []reconcile.Request {
		ref := controllerref.Of(obj, gk)
		if ref == nil {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}}}
	}
}

// Handler enqueues, paced, the requests mapFn makes of each event's object (both objects of an update, once
// each).
func (p *Pacer) Handler(mapFn handler.MapFunc) handler.EventHandler {
	add := func(ctx context.Context, q Queue, objs ...client.Object) {
		seen := map[reconcile.Request]bool{}
		for _, obj := range objs {
			for _, req := range mapFn(ctx, obj) {
				if !seen[req] {
					seen[req] = true
					p.Add(q, req)
				}
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q Queue) { add(ctx, q, e.Object) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q Queue) { add(ctx, q, e.ObjectOld, e.ObjectNew) },
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q Queue) { add(ctx, q, e.Object) },
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q Queue) {
			add(ctx, q, e.Object)
		},
	}
}
