package parallel

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestEachRunsWorkersAtOnce holds every call until four are running: with fewer at once, they time out.
func TestEachRunsWorkersAtOnce(t *testing.T) {
	var entered atomic.Int32
	var timedOut atomic.Bool
	err := Each(make([]struct{}, 8), 4, func(struct{}) error {
		entered.Add(1)
		deadline := time.Now().Add(5 * time.Second)
		for entered.Load() < 4 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		timedOut.Store(timedOut.Load() || entered.Load() < 4)
		return nil
	})
	if err != nil || timedOut.Load() || entered.Load() != 8 {
		t.Errorf("err %v, timed out %v, %d calls: want 8 calls, four at once", err, timedOut.Load(), entered.Load())
	}
}

func TestEachWithNoItems(t *testing.T) {
	if err := Each(nil, 4, func(int) error { return errors.New("called") }); err != nil {
		t.Error(err)
	}
}

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
