package bench

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// A release's milestones as a watcher of its Rollout sees them, besides Healthy at the end: where the time
// from the change to Healthy goes.
const (
	stageStarted = "release started" // Progressing on the new revision
	stageStepped = "steps done"      // the last step's pods done, finalising
	stageHealthy = "Healthy"
)

// rolloutStage is the milestone obj shows, or "".
func rolloutStage(obj runtime.Object) (string, string) {
	ro, err := rolloutFrom(obj)
	if err != nil {
		return "", ""
	}
	sub := ro.Status.CanaryStatus
	switch {
	case ro.Status.Phase != rolloutsv1beta1.RolloutPhaseProgressing || sub == nil:
		return ro.Name, ""
	case sub.FinalisingStep != "":
		return ro.Name, stageStepped
	default:
		return ro.Name, stageStarted
	}
}

// stageSpan is the time from one milestone to the next.
type stageSpan struct{ from, to string }

// stageSpans are the spans a fleet release reports, in order; "" is the change itself.
var stageSpans = []stageSpan{{"", stageStarted}, {stageStarted, stageStepped}, {stageStepped, stageHealthy}}

// stageMedians is, per span, the median (nearest rank) over the applications seen at both ends, and their
// count: an application whose milestone passed between two watch events is left out of the spans it bounds.
func stageMedians(begin time.Time, marks map[string]map[string]time.Time) map[stageSpan]spanFigure {
	out := map[stageSpan]spanFigure{}
	for _, s := range stageSpans {
		var spans []time.Duration
		for _, m := range marks {
			from, ok := m[s.from]
			if s.from == "" {
				from, ok = begin, true
			}
			if to, reached := m[s.to]; ok && reached && !to.Before(from) {
				spans = append(spans, to.Sub(from))
			}
		}
		if len(spans) > 0 {
			slices.Sort(spans)
			out[s] = spanFigure{median: percentile(spans, 50), n: len(spans)}
		}
	}
	return out
}

type spanFigure struct {
	median time.Duration
	n      int
}
