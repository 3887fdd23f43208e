package parallel

import (
	"errors"
	"sync/atomic"
	"testing"
)

func TestEachBoundsAndJoins(t *testing.T) {
	var running, peak, calls atomic.Int32
	items := make([]int, 200)
	for i := range items {
		items[i] = i
	}
	boom := errors.New("boom")
	err := Each(items, 32, func(i int) error {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		defer running.Add(-1)
		calls.Add(1)
		if i%100 == 7 {
			return boom
		}
		return nil
	})
	if calls.Load() != 200 {
		t.Errorf("%d calls, want 200", calls.Load())
	}
	if peak.Load() > 32 {
		t.Errorf("%d calls at once, want at most %d", peak.Load(), 32)
	}
	if !errors.Is(err, boom) || len(err.(interface{ Unwrap() []error }).Unwrap()) != 2 {
		t.Errorf("error %v, want both failures joined", err)
	}
}
