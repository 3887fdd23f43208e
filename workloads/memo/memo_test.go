package memo

import "testing"

func TestBoundedComputesOncePerKey(t *testing.T) {
	m := New[string, int](4)
	calls := 0
	compute := func(v int) func() int { return func() int { calls++; return v } }
	if got := m.Get("a", compute(1)); got != 1 {
		t.Fatalf("first a: %d, want 1", got)
	}
	if got := m.Get("a", compute(2)); got != 1 {
		t.Errorf("a again: %d, want the kept 1", got)
	}
	if got := m.Get("b", compute(3)); got != 3 {
		t.Errorf("b: %d, want 3", got)
	}
	if calls != 2 {
		t.Errorf("computed %d times, want 2", calls)
	}
}

func TestBoundedIsEmptiedWhenFull(t *testing.T) {
	m := New[int, int](8)
	for i := range 8 + 3 {
		if got := m.Get(i, func() int { return i * 2 }); got != i*2 {
			t.Fatalf("key %d: %d, want %d", i, got, i*2)
		}
	}
	// Full at key 8, the memo was emptied and then kept keys 8, 9 and 10.
	if n := m.Len(); n != 3 {
		t.Errorf("memo keeps %d values, want 3", n)
	}
	if got := m.Get(3, func() int { return -1 }); got != -1 {
		t.Errorf("key 3 after the memo was emptied: %d, want it computed again", got)
	}
}
