package plan

import (
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// State is where a child job is in its life.
type State int

const (
	// Running children count as active: status.active lists them and the concurrency policy weighs them.
	Running State = iota
	// Succeeded children count against successfulJobsHistoryLimit.
	Succeeded
	// Failed children count against failedJobsHistoryLimit.
	Failed
)

func (s State) String() string {
	switch s {
	case Succeeded:
		return "Complete"
	case Failed:
		return "Failed"
	default:
		return "Running"
	}
}

// Child is a job the AdvancedCronJob controls, whatever its kind.
type Child struct {
	Name string
	UID  types.UID
	// ScheduledAt is the apps.kruise.io/scheduled-at annotation; nil when missing or unreadable.
	ScheduledAt *time.Time
	// StartTime is the job's status.startTime; history pruning removes the earliest first.
	StartTime *time.Time
	State     State
	// Deleting children are on their way out: neither active nor pruned again.
	Deleting bool
}

// ChildName is the name of the child scheduled at t: the same run always gets the same name, so that no
// run is ever created twice.
func ChildName(cronJob string, t time.Time) string { return fmt.Sprintf("%s-%d", cronJob, t.Unix()) }

// ScheduledAt formats a run time for the apps.kruise.io/scheduled-at annotation (RFC 3339, in the
// schedule's zone).
func ScheduledAt(t time.Time) string { return t.Format(time.RFC3339) }

// ParseScheduledAt reads the annotation; nil when empty or unreadable.
func ParseScheduledAt(v string) *time.Time {
	t, err := time.Parse(time.RFC3339, v)
	if v == "" || err != nil {
		return nil
	}
	return &t
}

// Active are the children still running, by name.
func Active(children []Child) []Child {
	var out []Child
	for _, c := range children {
		if c.State == Running && !c.Deleting {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LastScheduleTime is the latest run known: the status's, or a later child's. The status's is kept even
// once history pruning removed every child, so that a pruned run is never started again.
func LastScheduleTime(status *time.Time, children []Child) *time.Time {
	last := status
	for _, c := range children {
		if c.ScheduledAt != nil && (last == nil || c.ScheduledAt.After(*last)) {
			last = c.ScheduledAt
		}
	}
	return last
}

// Prune are the finished children beyond the history limits, oldest first: those started earliest (never
// started counting as earliest, as upstream orders them), by name among equals. A nil limit keeps all.
func Prune(children []Child, successful, failed *int32) []Child {
	return append(beyond(children, Succeeded, successful), beyond(children, Failed, failed)...)
}

func beyond(children []Child, state State, limit *int32) []Child {
	if limit == nil {
		return nil
	}
	var done []Child
	for _, c := range children {
		if c.State == state && !c.Deleting {
			done = append(done, c)
		}
	}
	sort.Slice(done, func(i, j int) bool { return startedBefore(done[i], done[j]) })
	excess := len(done) - int(max(*limit, 0))
	if excess <= 0 {
		return nil
	}
	return done[:excess]
}

func startedBefore(a, b Child) bool {
	switch {
	case a.StartTime == nil && b.StartTime == nil, a.StartTime != nil && b.StartTime != nil && a.StartTime.Equal(*b.StartTime):
		return a.Name < b.Name
	case a.StartTime == nil:
		return true
	case b.StartTime == nil:
		return false
	default:
		return a.StartTime.Before(*b.StartTime)
	}
}
