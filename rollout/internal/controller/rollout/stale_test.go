package rollout

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestStaleVersions(t *testing.T) {
	ro := func(rv string) *rolloutsv1beta1.Rollout {
		return &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: rv}}
	}
	var s staleVersions
	if s.stale(ro("1")) {
		t.Fatal("nothing written yet, nothing is stale")
	}
	s.record("u1", "1")
	if !s.stale(ro("1")) {
		t.Error("the version the write replaced must read as stale")
	}
	if s.stale(ro("2")) {
		t.Error("a newer version is current")
	}
	if s.stale(ro("1")) {
		t.Error("once a newer version was seen the entry is gone")
	}
}
