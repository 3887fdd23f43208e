package reconcileutil

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestStaleVersions(t *testing.T) {
	ro := func(rv string) *rolloutsv1beta1.Rollout {
		return &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: rv}}
	}
	var s StaleVersions
	if s.Stale(ro("1")) {
		t.Fatal("nothing written yet, nothing is stale")
	}
	s.Record("u1", "1")
	if !s.Stale(ro("1")) {
		t.Error("the version the write replaced must read as stale")
	}
	if s.Stale(ro("2")) {
		t.Error("a newer version is current")
	}
	if s.Stale(ro("1")) {
		t.Error("once a newer version was seen the entry is gone")
	}
}

func TestStaleVersionsExpire(t *testing.T) {
	now := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	s := StaleVersions{now: func() time.Time { return now }}
	gone := &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{UID: "gone", ResourceVersion: "7"}}
	s.Record("gone", "7")
	now = now.Add(staleTTL + time.Second)
	if s.Stale(gone) {
		t.Error("an entry older than staleTTL still reads as stale")
	}
	s.Record("gone", "7")
	now = now.Add(staleTTL + time.Second)
	s.Record("other", "1")
	if _, kept := s.replaced["gone"]; kept || len(s.replaced) != 1 {
		t.Errorf("entries after a later write: %v; the expired one must be forgotten", s.replaced)
	}
}

func TestStaleVersionsEcho(t *testing.T) {
	ro := func(rv string) *rolloutsv1beta1.Rollout {
		return &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: rv}}
	}
	var s StaleVersions
	s.Record("u1", "1")
	if s.Echo(ro("2")) {
		t.Error("a write that was not settled has no echo to drop")
	}
	s.RecordSettled("u1", "1", "2")
	if !s.Echo(ro("2")) || s.Echo(ro("3")) {
		t.Error("only the version the settled write made is its echo")
	}
	if !s.Stale(ro("1")) || s.Echo(ro("2")) {
		t.Error("once a reconcile found the cache stale, it waits for the write's event: not an echo")
	}
	s.RecordSettled("u1", "2", "4")
	if s.Stale(ro("4")) || s.Echo(ro("4")) {
		t.Error("a reconcile that read the written version ends the expectation")
	}
}

func TestDropEchoes(t *testing.T) {
	var s StaleVersions
	s.RecordSettled("u1", "1", "2")
	update := func(rv string) event.UpdateEvent {
		return event.UpdateEvent{
			ObjectOld: &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: "1"}},
			ObjectNew: &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: rv}},
		}
	}
	p := s.DropEchoes()
	if p.Update(update("2")) {
		t.Error("the echo of a settled write passed")
	}
	if !p.Update(update("3")) {
		t.Error("another writer's version was dropped")
	}
}
