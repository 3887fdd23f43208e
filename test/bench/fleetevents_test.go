package bench

import (
	"strings"
	"testing"
)

func TestSortedCountsAndNote(t *testing.T) {
	counts := sortedCounts(map[string]int{"Rollout/Progressing": 2000, "Pod/Scheduled": 5000, "BatchRelease/Progressing": 2000, "Service/X": 1})
	want := []string{"Pod/Scheduled", "BatchRelease/Progressing", "Rollout/Progressing", "Service/X"}
	for i, c := range counts {
		if c.Key != want[i] {
			t.Fatalf("order %v, want %v", counts, want)
		}
	}
	if n := countSum(counts); n != 9001 {
		t.Errorf("sum %d, want 9001", n)
	}
	note := eventsNote(counts, 2)
	if note != "per Rollout: Pod/Scheduled 5.0, BatchRelease/Progressing 2.0" {
		t.Errorf("note %q", note)
	}
	if !strings.HasPrefix(eventsNote(counts[:1], 5), "per Rollout: Pod/Scheduled") {
		t.Errorf("a note of fewer reasons than asked: %q", eventsNote(counts[:1], 5))
	}
}
