package expectations

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// obj is pod "a" (uid 1) at a resourceVersion.
func obj(rv string, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "1", ResourceVersion: rv}}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{}
	}
	return p
}

func TestWait(t *testing.T) {
	owner := types.NamespacedName{Namespace: "ns", Name: "cs"}
	cases := []struct {
		name   string
		record func(*Expectations)
		cache  []*corev1.Pod
		wait   bool
	}{
		{name: "nothing pending", record: func(*Expectations) {}},
		{name: "create not seen", record: func(e *Expectations) { e.Created(owner, "a") }, wait: true},
		{name: "create seen", record: func(e *Expectations) { e.Created(owner, "a") }, cache: []*corev1.Pod{obj("5", false)}},
		{name: "delete not seen", record: func(e *Expectations) { e.Deleted(owner, "1") }, cache: []*corev1.Pod{obj("5", false)}, wait: true},
		{name: "delete seen as terminating", record: func(e *Expectations) { e.Deleted(owner, "1") }, cache: []*corev1.Pod{obj("6", true)}},
		{name: "delete seen as gone", record: func(e *Expectations) { e.Deleted(owner, "1") }},
		{name: "update not seen", record: func(e *Expectations) { e.Updated(owner, "a", "7") }, cache: []*corev1.Pod{obj("5", false)}, wait: true},
		{name: "update seen or newer", record: func(e *Expectations) { e.Updated(owner, "a", "7") }, cache: []*corev1.Pod{obj("9", false)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := New(clocktesting.NewFakePassiveClock(time.Now()), time.Minute)
			tc.record(e)
			if got := Wait(e, owner, tc.cache) > 0; got != tc.wait {
				t.Fatalf("wait = %v, want %v", got, tc.wait)
			}
		})
	}
}

func TestExpiresAfterTTL(t *testing.T) {
	owner := types.NamespacedName{Name: "cs"}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	e := New(clk, time.Minute)
	e.Created(owner, "never-seen")
	if Wait[*corev1.Pod](e, owner, nil) == 0 {
		t.Fatal("must wait before the TTL")
	}
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	if Wait[*corev1.Pod](e, owner, nil) != 0 {
		t.Fatal("must stop waiting after the TTL")
	}
}

func TestForgetAndWaitFor(t *testing.T) {
	owner := types.NamespacedName{Namespace: "ns", Name: "web"}
	e := New(clocktesting.NewFakePassiveClock(time.Now()), time.Minute)
	e.Created(owner, "a")
	if WaitFor(e, owner, []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "other"}}}) == 0 {
		t.Fatal("a creation the list does not show must be waited for")
	}
	if WaitFor(e, owner, []corev1.Pod{*obj("3", false)}) != 0 {
		t.Fatal("a listed creation must not be waited for")
	}
	e.Updated(owner, "a", "9")
	e.Forget(owner)
	if WaitFor[corev1.Pod](e, owner, nil) != 0 {
		t.Fatal("forgotten writes must not be waited for")
	}
}
