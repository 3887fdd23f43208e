package reconcileutil

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Progress-only writes wait ProgressInterval per object; with more objects in motion than ProgressBudget
// allows at that pace, each waits its share of a second, and the pace comes back once they rest.
func TestProgressWritesShareABudget(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		moving int
		want   time.Duration
	}{
		{1, ProgressInterval},
		{100, ProgressInterval},
		{200, 10 * time.Second},
		{1000, 50 * time.Second},
	} {
		var p ProgressWrites
		for i := range tc.moving {
			p.Mark(types.UID(fmt.Sprint(i)), now)
		}
		if got := p.Hold("0", true, now); got != tc.want {
			t.Errorf("%d objects in motion: a progress write waits %v, want %v", tc.moving, got, tc.want)
		}
		if got := p.Hold("0", false, now); got != 0 {
			t.Errorf("%d objects in motion: a write of more than progress waits %v, want none", tc.moving, got)
		}
	}
	var p ProgressWrites
	for i := range 1000 {
		p.Mark(types.UID(fmt.Sprint(i)), now)
	}
	if got := p.interval(now); got != 50*time.Second {
		t.Fatalf("interval with a thousand in motion: %v", got)
	}
	later := now.Add(inMotion)
	p.Mark("0", later)
	if got := p.Hold("0", true, later.Add(ProgressInterval)); got != 0 {
		t.Errorf("the others at rest for %v, a progress write still waits %v", inMotion, got)
	}
	if got := p.Hold("new", true, later); got != 0 {
		t.Errorf("an object never written waits %v for its first write", got)
	}
}
