package paced

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const interval = time.Second

var (
	a = reconcile.Request{NamespacedName: client.ObjectKey{Name: "a"}}
	b = reconcile.Request{NamespacedName: client.ObjectKey{Name: "b"}}
)

// step is one moment of a story: the clock moves by After, the events of Add arrive, then the queue must
// hold Want (and is drained, as a controller's workers would).
type step struct {
	After time.Duration
	Add   []reconcile.Request
	Want  []reconcile.Request
}

func TestPacer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a first event enters at once", []step{{Add: []reconcile.Request{a}, Want: []reconcile.Request{a}}}},
		{"a burst enters once at once and once an interval later", []step{
			{Add: []reconcile.Request{a, a}, Want: []reconcile.Request{a}},
			{After: 100 * time.Millisecond, Add: []reconcile.Request{a}},
			{After: 500 * time.Millisecond, Add: []reconcile.Request{a, a}},
			{After: 399 * time.Millisecond},
			{After: time.Millisecond, Want: []reconcile.Request{a}},
			{After: 500 * time.Millisecond, Add: []reconcile.Request{a}},
			{After: 499 * time.Millisecond},
			{After: time.Millisecond, Want: []reconcile.Request{a}},
			{After: 5 * time.Second},
		}},
		{"an event after a quiet interval enters at once", []step{
			{Add: []reconcile.Request{a}, Want: []reconcile.Request{a}},
			{After: interval, Add: []reconcile.Request{a}, Want: []reconcile.Request{a}},
			{After: 2 * interval, Add: []reconcile.Request{a}, Want: []reconcile.Request{a}},
		}},
		{"an event while the folded reconcile runs gets one more", []step{
			{Add: []reconcile.Request{a}, Want: []reconcile.Request{a}},
			{After: 200 * time.Millisecond, Add: []reconcile.Request{a}},
			{After: 800 * time.Millisecond, Want: []reconcile.Request{a}},
			{After: 10 * time.Millisecond, Add: []reconcile.Request{a}},
			{After: 989 * time.Millisecond},
			{After: time.Millisecond, Want: []reconcile.Request{a}},
		}},
		{"requests are paced apart", []step{
			{Add: []reconcile.Request{a}, Want: []reconcile.Request{a}},
			{After: 10 * time.Millisecond, Add: []reconcile.Request{b, a}, Want: []reconcile.Request{b}},
			{After: 990 * time.Millisecond, Want: []reconcile.Request{a}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
			p := New(interval, clock)
			q := newQueue(t, clock)
			for i, s := range tc.steps {
				clock.Step(s.After)
				for _, req := range s.Add {
					p.Add(q, req)
				}
				if got := drain(q); !slices.Equal(got, s.Want) {
					t.Errorf("step %d: queue held %v, want %v", i, got, s.Want)
				}
			}
		})
	}
}

func TestHandlerFoldsAnUpdatesObjects(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
	q := newQueue(t, clock)
	h := New(interval, clock).Handler(func(_ context.Context, obj client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: obj.GetLabels()["set"]}}}
	})
	pod := func(set string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"set": set}}}
	}
	h.Update(t.Context(), event.UpdateEvent{ObjectOld: pod("a"), ObjectNew: pod("a")}, q)
	h.Update(t.Context(), event.UpdateEvent{ObjectOld: pod("a"), ObjectNew: pod("b")}, q)
	if got := drain(q); !slices.Equal(got, []reconcile.Request{a, b}) {
		t.Errorf("queue held %v, want a then b", got)
	}
	clock.Step(interval)
	if got := drain(q); !slices.Equal(got, []reconcile.Request{a}) {
		t.Errorf("an interval later the queue held %v, want a: the second update's old object", got)
	}
}

func TestSweepForgetsPastRequests(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
	p := New(interval, clock)
	q := newQueue(t, clock)
	p.Add(q, a)
	clock.Step(20 * interval)
	p.Add(q, b)
	if _, ok := p.last[a]; ok || len(p.last) != 1 {
		t.Errorf("remembered %v, want only b", p.last)
	}
}

func newQueue(t *testing.T, clock *clocktesting.FakeClock) Queue {
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: clock})
	t.Cleanup(q.ShutDown)
	return q
}

// drain takes what the queue holds now, in order, once the delaying queue has moved what is due into it.
func drain(q Queue) []reconcile.Request {
	var out []reconcile.Request
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		if q.Len() == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		req, _ := q.Get()
		q.Done(req)
		out = append(out, req)
		deadline = time.Now().Add(20 * time.Millisecond)
	}
	return out
}

// controller-runtime's priority queue keeps one entry per request: an Add from elsewhere (the controller's own
// object changed) runs a request that was waiting at once, and an event after that must still get its
// reconcile.
func TestPriorityQueueKeepsTheFoldedEvent(t *testing.T) {
	p := New(300*time.Millisecond, nil)
	q := priorityqueue.New[reconcile.Request]("paced-test")
	t.Cleanup(q.ShutDown)
	take := func(what string) {
		t.Helper()
		got := make(chan reconcile.Request, 1)
		go func() {
			req, _ := q.Get()
			q.Done(req)
			got <- req
		}()
		select {
		case req := <-got:
			if req != a {
				t.Fatalf("%s: got %v", what, req)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: nothing entered the queue", what)
		}
	}
	p.Add(q, a)
	take("the first event")
	p.Add(q, a) // waits for the interval
	q.Add(a)    // runs it now
	take("the Add from elsewhere")
	p.Add(q, a)
	take("the event after it")
}

func TestControllerOf(t *testing.T) {
	owned := func(apiVersion, kind string, controller bool) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: apiVersion, Kind: kind, Name: "owner", Controller: &controller},
		}}}
	}
	mapFn := ControllerOf(schema.GroupKind{Group: "apps.kruise.io", Kind: "CloneSet"})
	want := []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "owner"}}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want []reconcile.Request
	}{
		{"controlled by a CloneSet of any version", owned("apps.kruise.io/v1beta1", "CloneSet", true), want},
		{"an owner that is not the controller", owned("apps.kruise.io/v1alpha1", "CloneSet", false), nil},
		{"a kind of that name in another group", owned("example.com/v1", "CloneSet", true), nil},
		{"another kind of the group", owned("apps.kruise.io/v1alpha1", "DaemonSet", true), nil},
		{"no owner", &corev1.Pod{}, nil},
	} {
		if got := mapFn(context.Background(), tc.pod); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
