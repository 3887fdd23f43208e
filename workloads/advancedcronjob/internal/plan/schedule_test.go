package plan

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestParseScheduleAcceptsWhatUpstreamAccepts(t *testing.T) {
	for _, s := range []string{"*/1 * * * *", "0 9 * * 1-5", "@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@annually",
		"@midnight", "@every 10s", "@every 1h30m", "TZ=Asia/Shanghai 0 9 * * *", "CRON_TZ=UTC 0 0 * * *", "0 0 * JAN-MAR SUN"} {
		if _, err := ParseSchedule(s, nil, time.UTC); err != nil {
			t.Errorf("%q refused: %v", s, err)
		}
	}
	for s, reason := range map[string]string{
		"* * * * * *":             ReasonUnparseableSchedule, // seconds are not part of the standard form
		"61 * * * *":              ReasonUnparseableSchedule,
		"@every":                  ReasonUnparseableSchedule,
		"@fortnightly":            ReasonUnparseableSchedule,
		"TZ=Mars/Olympus * * * *": ReasonUnparseableSchedule,
		"":                        ReasonUnparseableSchedule,
	} {
		_, err := ParseSchedule(s, nil, time.UTC)
		var se *ScheduleError
		if !errors.As(err, &se) || se.Reason != reason {
			t.Errorf("%q: %v, want %s", s, err, reason)
		}
	}
	_, err := ParseSchedule("* * * * *", ptr.To("Mars/Olympus"), time.UTC)
	var se *ScheduleError
	if !errors.As(err, &se) || se.Reason != ReasonUnknownTimeZone || !strings.Contains(se.Message, `invalid timeZone: "Mars/Olympus"`) {
		t.Errorf("unknown zone: %v", err)
	}
}

// The runs a schedule makes after a time, in its zone: time zones, and the days daylight saving time
// starts and ends, where the cron library skips a local time that does not exist and runs one that
// happens twice twice (as upstream, which uses the same library).
func TestScheduleRunsAcrossTimeZonesAndDST(t *testing.T) {
	ny := zone(t, "America/New_York")
	shanghai := zone(t, "Asia/Shanghai")
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name     string
		schedule string
		timeZone *string
		local    *time.Location
		from     time.Time
		want     []string // UTC
	}{
		{name: "every minute", schedule: "*/1 * * * *", from: utc("2026-12-04T13:59:30Z"),
			want: []string{"2026-12-04T14:00:00Z", "2026-12-04T14:01:00Z", "2026-12-04T14:02:00Z"}},
		{name: "09:00 in Shanghai is 01:00 UTC", schedule: "0 9 * * *", timeZone: ptr.To("Asia/Shanghai"), from: utc("2026-12-04T00:00:00Z"),
			want: []string{"2026-12-04T01:00:00Z", "2026-12-05T01:00:00Z"}},
		{name: "a TZ prefix in the schedule", schedule: "TZ=Asia/Shanghai 0 9 * * *", from: utc("2026-12-04T02:00:00Z"),
			want: []string{"2026-12-05T01:00:00Z"}},
		{name: "no timeZone: the manager's zone", schedule: "0 9 * * *", local: shanghai, from: utc("2026-12-04T00:00:00Z"),
			want: []string{"2026-12-04T01:00:00Z"}},
		{name: "a day's runs in New York before and after DST starts", schedule: "0 12 * * *", timeZone: ptr.To("America/New_York"),
			from: utc("2026-03-07T00:00:00Z"),
			want: []string{"2026-03-07T17:00:00Z", "2026-03-08T16:00:00Z", "2026-03-09T16:00:00Z"}},
		{name: "02:30 does not exist when DST starts: that day has no run", schedule: "30 2 * * *", timeZone: ptr.To("America/New_York"),
			from: utc("2026-03-07T12:00:00Z"),
			want: []string{"2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}},
		{name: "01:30 happens twice when DST ends: two runs", schedule: "30 1 * * *", timeZone: ptr.To("America/New_York"),
			from: utc("2026-10-31T16:00:00Z"),
			want: []string{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"}},
		{name: "hourly through the hour DST ends", schedule: "@hourly", timeZone: ptr.To("America/New_York"),
			from: utc("2026-11-01T04:30:00Z"),
			want: []string{"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},
		{name: "@every counts from the time given, whatever the zone", schedule: "@every 10s", timeZone: ptr.To("America/New_York"),
			from: utc("2026-12-04T13:59:35Z"),
			want: []string{"2026-12-04T13:59:45Z", "2026-12-04T13:59:55Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			local := tc.local
			if local == nil {
				local = ny // never the zone of a case that names one
			}
			s, err := ParseSchedule(tc.schedule, tc.timeZone, local)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for next := s.Next(tc.from); len(got) < len(tc.want); next = s.Next(next) {
				got = append(got, next.UTC().Format(time.RFC3339))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("runs %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDue(t *testing.T) {
	base := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := base.Add(d); return &v }
	tests := []struct {
		name     string
		schedule string
		earliest time.Time
		now      time.Time
		want     *time.Time
		wantMany bool
		wantErr  string
	}{
		{name: "nothing due yet", schedule: "*/1 * * * *", earliest: base.Add(10 * time.Second), now: base.Add(59 * time.Second)},
		{name: "the first run", schedule: "*/1 * * * *", earliest: base.Add(10 * time.Second), now: base.Add(60 * time.Second), want: at(time.Minute)},
		{name: "a run at now exactly is due", schedule: "*/5 * * * *", earliest: base, now: base.Add(5 * time.Minute), want: at(5 * time.Minute)},
		{name: "several missed: only the most recent", schedule: "*/1 * * * *", earliest: base, now: base.Add(7*time.Minute + 30*time.Second),
			want: at(7 * time.Minute)},
		{name: "three hours down, hourly at half past", schedule: "30 * * * *", earliest: base, now: base.Add(3*time.Hour + 10*time.Minute),
			want: at(2*time.Hour + 30*time.Minute)},
		{name: "irregular hours", schedule: "30 6-16/4 * * 1-5", earliest: base.Add(-72 * time.Hour), now: base.Add(5 * time.Hour),
			want: at(4*time.Hour + 30*time.Minute)},
		{name: "@every from the last run", schedule: "@every 10s", earliest: base, now: base.Add(35 * time.Second), want: at(30 * time.Second)},
		{name: "100 missed is not too many", schedule: "*/1 * * * *", earliest: base, now: base.Add(100 * time.Minute), want: at(100 * time.Minute)},
		{name: "101 missed is", schedule: "*/1 * * * *", earliest: base, now: base.Add(101 * time.Minute), want: at(101 * time.Minute), wantMany: true},
		{name: "a year down costs one run", schedule: "*/1 * * * *", earliest: base, now: base.Add(365 * 24 * time.Hour),
			want: at(365 * 24 * time.Hour), wantMany: true},
		{name: "a date that never comes", schedule: "59 23 31 2 *", earliest: base, now: base.Add(time.Hour), wantErr: "no run within five years"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSchedule(tc.schedule, nil, time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			got, many, err := Due(s, tc.earliest, tc.now)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !sameTime(got, tc.want) || many != tc.wantMany {
				t.Errorf("Due = %v, many %v, err %v; want %v, many %v", got, many, err, tc.want, tc.wantMany)
			}
		})
	}
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
