package plan

import (
	"errors"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// nextScheduleDelta pads each wake-up, as kube's CronJob controller does, so that a clock a little behind
// the schedule's still finds the run due.
const nextScheduleDelta = 100 * time.Millisecond

// Input is what the controller knows about one AdvancedCronJob.
type Input struct {
	// Name is the AdvancedCronJob's: its children are named after it.
	Name string
	Now  time.Time
	// Local is the zone of a schedule without timeZone: the manager's.
	Local   *time.Location
	Created time.Time
	Spec    *kruiseappsv1alpha1.AdvancedCronJobSpec
	// LastScheduleTime is status.lastScheduleTime.
	LastScheduleTime *time.Time
	Children         []Child
}

// Skip says why a run that is due does not start.
type Skip string

const (
	// SkipNone: nothing was due, or the run starts.
	SkipNone Skip = ""
	// SkipTooLate: the run is older than startingDeadlineSeconds (event MissSchedule).
	SkipTooLate Skip = "MissSchedule"
	// SkipForbidden: concurrencyPolicy Forbid and a child still runs (event JobAlreadyActive).
	SkipForbidden Skip = "JobAlreadyActive"
)

// Plan is one step of an AdvancedCronJob.
type Plan struct {
	// Active and LastScheduleTime are the status before the step's run (the controller adds the run).
	Active           []Child
	LastScheduleTime *time.Time
	// Prune are the finished children beyond the history limits.
	Prune []Child
	// Replace are the running children to delete before Run starts (concurrencyPolicy Replace).
	Replace []Child
	// Run is the scheduled time of the child to create; nil for none.
	Run *time.Time
	// Due is the run that was due, started or not; Skip says why it did not start.
	Due  *time.Time
	Skip Skip
	// TooManyMissed reports more than 100 runs missed since the last one (event TooManyMissedTimes).
	TooManyMissed bool
	// Wake is when to look again for the next run; 0 for never (paused, or a schedule that cannot run).
	Wake time.Duration
	// Err says why the schedule cannot run; nothing is scheduled until the spec changes.
	Err *ScheduleError
}

// Decide plans one step: prune the history, and start the run that is due if the deadline and the
// concurrency policy let it. Paused AdvancedCronJobs only prune.
func Decide(in Input) Plan {
	s := in.Spec
	p := Plan{Active: Active(in.Children), LastScheduleTime: LastScheduleTime(in.LastScheduleTime, in.Children)}
	p.Prune = Prune(in.Children, s.SuccessfulJobsHistoryLimit, s.FailedJobsHistoryLimit)
	if ptr.Deref(s.Paused, false) {
		return p
	}
	sched, err := ParseSchedule(s.Schedule, s.TimeZone, in.Local)
	if err != nil {
		p.Err = asScheduleError(err)
		return p
	}
	if err := p.schedule(in, sched); err != nil {
		p.Err = asScheduleError(err)
	}
	return p
}

// schedule finds the run that is due and whether it may start, and when to look again.
func (p *Plan) schedule(in Input, sched cron.Schedule) error {
	earliest := in.Created
	if p.LastScheduleTime != nil {
		earliest = *p.LastScheduleTime
	}
	latest, _, err := Due(sched, earliest, in.Now)
	if err != nil {
		return err
	}
	p.Wake = wake(sched, earliest, latest, in.Now)
	if latest == nil {
		return nil
	}
	p.Due = latest
	due, many, err := Due(sched, withinDeadline(earliest, in.Now, in.Spec.StartingDeadlineSeconds), in.Now)
	if err != nil {
		return err
	}
	if due == nil || !due.Equal(*latest) {
		// Every run since the last one is older than the deadline.
		p.Skip = SkipTooLate
		return nil
	}
	p.TooManyMissed = many
	p.decideRun(in, *due)
	return nil
}

// decideRun applies the concurrency policy to the run due at t.
func (p *Plan) decideRun(in Input, t time.Time) {
	for _, c := range in.Children {
		if c.Name == ChildName(in.Name, t) || (c.ScheduledAt != nil && c.ScheduledAt.Equal(t)) {
			return // already started (the cache may not show the status that says so yet)
		}
	}
	switch in.Spec.ConcurrencyPolicy {
	case kruiseappsv1alpha1.ForbidConcurrent:
		if len(p.Active) > 0 {
			p.Skip = SkipForbidden
			return
		}
	case kruiseappsv1alpha1.ReplaceConcurrent:
		p.Replace = p.Active
	}
	run := t.In(zoneOf(in))
	p.Run = &run
}

// zoneOf is the zone the schedule runs in, for the child's scheduled-at annotation (the cron library
// answers in the zone of the time it is asked about).
func zoneOf(in Input) *time.Location {
	if in.Spec.TimeZone != nil {
		if loc, err := time.LoadLocation(*in.Spec.TimeZone); err == nil {
			return loc
		}
	}
	if in.Local == nil {
		return time.Local
	}
	return in.Local
}

// withinDeadline raises earliest to now - startingDeadlineSeconds: nothing older starts.
func withinDeadline(earliest, now time.Time, deadline *int64) time.Time {
	if deadline == nil {
		return earliest
	}
	if d := now.Add(-time.Duration(*deadline) * time.Second); d.After(earliest) {
		return d
	}
	return earliest
}

// wake is how long until the run after the latest due one (or after earliest when none is due).
func wake(sched cron.Schedule, earliest time.Time, latest *time.Time, now time.Time) time.Duration {
	from := earliest
	if latest != nil {
		from = *latest
	}
	next := sched.Next(from)
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(now), 0) + nextScheduleDelta
}

func asScheduleError(err error) *ScheduleError {
	var se *ScheduleError
	if errors.As(err, &se) {
		return se
	}
	return &ScheduleError{Reason: ReasonInvalidSchedule, Message: err.Error()}
}
