package reconcileutil

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
