package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// reasonCount is how many events of one kind of object and reason a run created.
type reasonCount struct {
	Key   string // "<involved kind>/<reason>"
	Count int
}

// fleetEvents counts the events of the fleet's namespace created since begin, by involved kind and reason,
// the most frequent first: the audit log tells how many events the manager wrote, not which.
func fleetEvents(ctx context.Context, env *Env, begin time.Time) ([]reasonCount, error) {
	list, err := env.Kube.CoreV1().Events(fleetNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the fleet's events: %w", err)
	}
	counts, warnings := countEvents(list.Items, begin)
	for _, w := range warnings[:min(5, len(warnings))] {
		env.Logf("warning events: %d× %s", w.Count, w.Key)
	}
	return counts, nil
}

// countEvents counts the events created since begin by involved kind and reason, and the Warning ones also by
// message (its first 200 bytes), which says why the controllers failed.
func countEvents(events []corev1.Event, begin time.Time) (byReason, warnings []reasonCount) {
	reasons, messages := map[string]int{}, map[string]int{}
	for _, e := range events {
		if e.CreationTimestamp.Time.Before(begin.Truncate(time.Second)) {
			continue
		}
		key := e.InvolvedObject.Kind + "/" + e.Reason
		reasons[key] += max(1, int(e.Count))
		if e.Type == corev1.EventTypeWarning {
			messages[key+": "+e.Message[:min(200, len(e.Message))]] += max(1, int(e.Count))
		}
	}
	return sortedCounts(reasons), sortedCounts(messages)
}

func sortedCounts(counts map[string]int) []reasonCount {
	out := make([]reasonCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, reasonCount{Key: k, Count: n})
	}
	slices.SortFunc(out, func(a, b reasonCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

func countSum(counts []reasonCount) int {
	n := 0
	for _, c := range counts {
		n += c.Count
	}
	return n
}

// eventsNote names the most frequent reasons, per Rollout.
func eventsNote(counts []reasonCount, top int) string {
	parts := make([]string, 0, top)
	for _, c := range counts[:min(top, len(counts))] {
		parts = append(parts, fmt.Sprintf("%s %.1f", c.Key, float64(c.Count)/float64(fleetSize)))
	}
	return "per Rollout: " + strings.Join(parts, ", ")
}
