package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Reasons a schedule cannot be used; they are also the reasons of the Warning events that report them
// (kube's CronJob controller's).
const (
	ReasonUnknownTimeZone     = "UnknownTimeZone"
	ReasonUnparseableSchedule = "UnparseableSchedule"
	ReasonInvalidSchedule     = "InvalidSchedule"
)

// ScheduleError says why a schedule cannot be used; nothing runs until the spec changes.
type ScheduleError struct {
	Reason  string
	Message string
}

func (e *ScheduleError) Error() string { return e.Message }

// HasTimeZonePrefix reports whether a schedule names its own zone (TZ= or CRON_TZ=, which the cron parser
// reads); the webhook refuses it together with spec.timeZone.
func HasTimeZonePrefix(schedule string) bool { return strings.Contains(schedule, "TZ") }

// ParseSchedule reads a schedule as upstream does (the standard five fields, the @hourly-style descriptors,
// @every <duration>, a TZ= prefix) in timeZone, or in local when timeZone is unset.
func ParseSchedule(schedule string, timeZone *string, local *time.Location) (cron.Schedule, error) {
	if timeZone != nil && !HasTimeZonePrefix(schedule) {
		if _, err := time.LoadLocation(*timeZone); err != nil {
			return nil, &ScheduleError{Reason: ReasonUnknownTimeZone, Message: fmt.Sprintf("invalid timeZone: %q: %s", *timeZone, err)}
		}
		schedule = "TZ=" + *timeZone + " " + schedule
	}
	s, err := cron.ParseStandard(schedule)
	if err != nil {
		return nil, &ScheduleError{Reason: ReasonUnparseableSchedule, Message: fmt.Sprintf("unparseable schedule: %q : %s", schedule, err)}
	}
	if spec, ok := s.(*cron.SpecSchedule); ok && timeZone == nil && !HasTimeZonePrefix(schedule) && local != nil {
		// The parser takes the process's zone; the caller's is the one meant (tests pin it).
		spec.Location = local
	}
	return s, nil
}

// maxMissed is how many missed runs kube's CronJob controller tolerates before it warns of clock skew.
const maxMissed = 100

// Due is the most recent run time at or before now that follows earliest; nil when none. Many reports more
// than maxMissed runs between them (only the most recent one is ever started: no stampede after downtime).
// It counts the runs as kube does, from the interval between the first two, so that a schedule missed for
// years costs no more than one that was missed twice.
func Due(s cron.Schedule, earliest, now time.Time) (due *time.Time, many bool, err error) {
	t1 := s.Next(earliest)
	t2 := s.Next(t1)
	if t1.IsZero() {
		// The parser looks five years ahead: "59 23 31 2 *" parses but never runs.
		return nil, false, &ScheduleError{Reason: ReasonInvalidSchedule, Message: "the schedule has no run within five years"}
	}
	if now.Before(t1) {
		return nil, false, nil
	}
	if t2.IsZero() || now.Before(t2) {
		return &t1, false, nil
	}
	interval := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if interval < 1 {
		return nil, false, &ScheduleError{Reason: ReasonInvalidSchedule, Message: "time difference between two schedules is less than 1 second"}
	}
	missed := int64(now.Sub(t1).Seconds())/interval + 1
	// Start one interval before the estimated last run and let the schedule walk to it: exact for @every
	// and regular schedules, and still right for irregular ones such as "30 6-16/4 * * 1-5".
	var last time.Time
	for t := s.Next(t1.Add(time.Duration((missed-2)*interval) * time.Second)); !t.IsZero() && !t.After(now); t = s.Next(t) {
		last = t
	}
	if last.IsZero() {
		return nil, missed > maxMissed, nil
	}
	return &last, missed > maxMissed, nil
}
