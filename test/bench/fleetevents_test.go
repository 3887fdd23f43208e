package bench

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func TestCountEvents(t *testing.T) {
	begin := time.Date(2026, 12, 5, 16, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(begin.Add(d)) }
	event := func(kind, reason, typ, msg string, count int32, created time.Duration) corev1.Event {
		return corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(created)}, InvolvedObject: corev1.ObjectReference{Kind: kind},
			Reason: reason, Type: typ, Message: msg, Count: count}
	}
	byReason, warnings := countEvents([]corev1.Event{
		event("Rollout", "Progressing", corev1.EventTypeNormal, "step 1", 0, time.Second),
		event("BatchRelease", "ReconcileFailed", corev1.EventTypeWarning, "timeout", 3, time.Second),
		event("BatchRelease", "ReconcileFailed", corev1.EventTypeWarning, strings.Repeat("x", 300), 1, 2*time.Second),
		event("Rollout", "Progressing", corev1.EventTypeNormal, "before", 1, -time.Minute),
	}, begin)
	if len(byReason) != 2 || byReason[0] != (reasonCount{"BatchRelease/ReconcileFailed", 4}) || byReason[1] != (reasonCount{"Rollout/Progressing", 1}) {
		t.Errorf("by reason %v", byReason)
	}
	if len(warnings) != 2 || warnings[0] != (reasonCount{"BatchRelease/ReconcileFailed: timeout", 3}) || len(warnings[1].Key) != len("BatchRelease/ReconcileFailed: ")+200 {
		t.Errorf("warnings %v", warnings)
	}
}
