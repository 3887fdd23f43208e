package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// t0 is a minute boundary; the AdvancedCronJobs of the tests were created ten seconds before it.
var t0 = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time { v := t0.Add(d); return &v }

func spec(mutate ...func(*kruiseappsv1alpha1.AdvancedCronJobSpec)) *kruiseappsv1alpha1.AdvancedCronJobSpec {
	s := &kruiseappsv1alpha1.AdvancedCronJobSpec{
		Schedule: "*/1 * * * *", ConcurrencyPolicy: kruiseappsv1alpha1.AllowConcurrent, Paused: ptr.To(false),
		SuccessfulJobsHistoryLimit: ptr.To[int32](3), FailedJobsHistoryLimit: ptr.To[int32](1),
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func policy(p kruiseappsv1alpha1.ConcurrencyPolicy) func(*kruiseappsv1alpha1.AdvancedCronJobSpec) {
	return func(s *kruiseappsv1alpha1.AdvancedCronJobSpec) { s.ConcurrencyPolicy = p }
}

func deadline(seconds int64) func(*kruiseappsv1alpha1.AdvancedCronJobSpec) {
	return func(s *kruiseappsv1alpha1.AdvancedCronJobSpec) { s.StartingDeadlineSeconds = &seconds }
}

// child is the run scheduled d after t0, started then.
func child(d time.Duration, state State, mutate ...func(*Child)) Child {
	c := Child{Name: ChildName("acj", t0.Add(d)), UID: types.UID("uid-" + ChildName("acj", t0.Add(d))), ScheduledAt: at(d), StartTime: at(d + time.Second), State: state}
	for _, m := range mutate {
		m(&c)
	}
	return c
}

func names(cs []Child) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return strings.Join(out, ",")
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name        string
		spec        *kruiseappsv1alpha1.AdvancedCronJobSpec
		now         time.Time
		last        *time.Time
		children    []Child
		wantRun     *time.Time
		wantSkip    Skip
		wantReplace string
		wantActive  string
		wantLast    *time.Time
		wantMany    bool
		wantWake    time.Duration
		wantErr     string
	}{
		{name: "nothing due: wake at the next run", spec: spec(), now: t0.Add(-5 * time.Second), wantWake: 5*time.Second + nextScheduleDelta},
		{name: "the first run is due", spec: spec(), now: t0.Add(2 * time.Second), wantRun: at(0), wantWake: 58*time.Second + nextScheduleDelta},
		{name: "a run that started is not started again", spec: spec(), now: t0.Add(2 * time.Second),
			children: []Child{child(0, Running, func(c *Child) { c.ScheduledAt = nil })}, wantActive: "acj-1796378400",
			wantWake: 58*time.Second + nextScheduleDelta},
		{name: "lastScheduleTime from the children: the next run is not due yet", spec: spec(), now: t0.Add(30 * time.Second),
			children: []Child{child(0, Succeeded)}, wantLast: at(0), wantWake: 30*time.Second + nextScheduleDelta},
		{name: "a pruned run is remembered by the status", spec: spec(), now: t0.Add(30 * time.Second), last: at(0),
			wantLast: at(0), wantWake: 30*time.Second + nextScheduleDelta},
		{name: "after downtime only the most recent run starts", spec: spec(), now: t0.Add(3*time.Hour + 20*time.Second), last: at(0),
			wantRun: at(3 * time.Hour), wantLast: at(0), wantWake: 40*time.Second + nextScheduleDelta, wantMany: true},
		{name: "a few missed runs: no warning", spec: spec(), now: t0.Add(5*time.Minute + 20*time.Second), last: at(0),
			wantRun: at(5 * time.Minute), wantLast: at(0), wantWake: 40*time.Second + nextScheduleDelta},
		{name: "within startingDeadlineSeconds the run starts", spec: spec(deadline(30)), now: t0.Add(20 * time.Second),
			wantRun: at(0), wantWake: 40*time.Second + nextScheduleDelta},
		{name: "past startingDeadlineSeconds it does not", spec: spec(deadline(10)), now: t0.Add(20 * time.Second),
			wantSkip: SkipTooLate, wantWake: 40*time.Second + nextScheduleDelta},
		{name: "a deadline keeps a long downtime from counting as many missed runs", spec: spec(deadline(200)),
			now: t0.Add(3*time.Hour + 20*time.Second), last: at(0), wantRun: at(3 * time.Hour), wantLast: at(0),
			wantWake: 40*time.Second + nextScheduleDelta},
		{name: "Allow: runs overlap", spec: spec(), now: t0.Add(time.Minute + time.Second), children: []Child{child(0, Running)},
			wantRun: at(time.Minute), wantActive: "acj-1796378400", wantLast: at(0), wantWake: 59*time.Second + nextScheduleDelta},
		{name: "Forbid: no run while one is active", spec: spec(policy(kruiseappsv1alpha1.ForbidConcurrent)), now: t0.Add(time.Minute + time.Second),
			children: []Child{child(0, Running)}, wantSkip: SkipForbidden, wantActive: "acj-1796378400", wantLast: at(0),
			wantWake: 59*time.Second + nextScheduleDelta},
		{name: "Forbid: the blocked run starts late once the active one finished", spec: spec(policy(kruiseappsv1alpha1.ForbidConcurrent)),
			now: t0.Add(time.Minute + 40*time.Second), children: []Child{child(0, Succeeded)}, wantRun: at(time.Minute), wantLast: at(0),
			wantWake: 20*time.Second + nextScheduleDelta},
		{name: "Forbid: a child being deleted is not active", spec: spec(policy(kruiseappsv1alpha1.ForbidConcurrent)), now: t0.Add(time.Minute),
			children: []Child{child(0, Running, func(c *Child) { c.Deleting = true })}, wantRun: at(time.Minute), wantLast: at(0),
			wantWake: time.Minute + nextScheduleDelta},
		{name: "Replace: the active ones go", spec: spec(policy(kruiseappsv1alpha1.ReplaceConcurrent)), now: t0.Add(2 * time.Minute),
			children: []Child{child(time.Minute, Running), child(0, Running), child(-time.Minute, Failed)}, wantRun: at(2 * time.Minute),
			wantReplace: "acj-1796378400,acj-1796378460", wantActive: "acj-1796378400,acj-1796378460", wantLast: at(time.Minute),
			wantWake: time.Minute + nextScheduleDelta},
		{name: "Replace: nothing to replace before the run is due", spec: spec(policy(kruiseappsv1alpha1.ReplaceConcurrent)),
			now: t0.Add(30 * time.Second), children: []Child{child(0, Running)}, wantActive: "acj-1796378400", wantLast: at(0),
			wantWake: 30*time.Second + nextScheduleDelta},
		{name: "paused: nothing runs, nothing to wake for", spec: spec(func(s *kruiseappsv1alpha1.AdvancedCronJobSpec) { s.Paused = ptr.To(true) }),
			now: t0.Add(5 * time.Minute)},
		{name: "an unknown zone", spec: spec(func(s *kruiseappsv1alpha1.AdvancedCronJobSpec) { s.TimeZone = ptr.To("Mars/Olympus") }),
			now: t0, wantErr: ReasonUnknownTimeZone},
		{name: "an unparseable schedule", spec: spec(func(s *kruiseappsv1alpha1.AdvancedCronJobSpec) { s.Schedule = "every minute" }),
			now: t0, wantErr: ReasonUnparseableSchedule},
		{name: "a schedule that never runs", spec: spec(func(s *kruiseappsv1alpha1.AdvancedCronJobSpec) { s.Schedule = "0 0 30 2 *" }),
			now: t0, wantErr: ReasonInvalidSchedule},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(Input{Name: "acj", Now: tc.now, Local: time.UTC, Created: t0.Add(-10 * time.Second), Spec: tc.spec,
				LastScheduleTime: tc.last, Children: tc.children})
			if tc.wantErr != "" {
				if p.Err == nil || p.Err.Reason != tc.wantErr || p.Run != nil || p.Wake != 0 {
					t.Fatalf("plan %+v, want error %s", p, tc.wantErr)
				}
				return
			}
			if p.Err != nil {
				t.Fatalf("error %v", p.Err)
			}
			if !sameTime(p.Run, tc.wantRun) || p.Skip != tc.wantSkip || p.TooManyMissed != tc.wantMany || p.Wake != tc.wantWake {
				t.Errorf("run %v skip %q many %v wake %v; want %v %q %v %v", p.Run, p.Skip, p.TooManyMissed, p.Wake,
					tc.wantRun, tc.wantSkip, tc.wantMany, tc.wantWake)
			}
			if names(p.Replace) != tc.wantReplace || names(p.Active) != tc.wantActive || !sameTime(p.LastScheduleTime, tc.wantLast) {
				t.Errorf("replace %q active %q last %v; want %q %q %v", names(p.Replace), names(p.Active), p.LastScheduleTime,
					tc.wantReplace, tc.wantActive, tc.wantLast)
			}
		})
	}
}

func TestPrune(t *testing.T) {
	noStart := func(c *Child) { c.StartTime = nil }
	deleting := func(c *Child) { c.Deleting = true }
	tests := []struct {
		name               string
		children           []Child
		successful, failed *int32
		want               string
	}{
		{name: "within the limits nothing goes", children: []Child{child(0, Succeeded), child(time.Minute, Failed)},
			successful: ptr.To[int32](1), failed: ptr.To[int32](1)},
		{name: "the earliest started go first", successful: ptr.To[int32](2), failed: ptr.To[int32](1),
			children: []Child{child(2*time.Minute, Succeeded), child(0, Succeeded), child(3*time.Minute, Succeeded), child(time.Minute, Succeeded)},
			want:     "acj-1796378400,acj-1796378460"},
		{name: "never started counts as earliest", successful: ptr.To[int32](1),
			children: []Child{child(0, Succeeded), child(time.Minute, Succeeded, noStart)}, want: "acj-1796378460"},
		{name: "same start: by name", successful: ptr.To[int32](1),
			children: []Child{child(time.Minute, Succeeded, noStart), child(0, Succeeded, noStart)}, want: "acj-1796378400"},
		{name: "limits count each outcome apart; running children never go", successful: ptr.To[int32](0), failed: ptr.To[int32](1),
			children: []Child{child(0, Failed), child(time.Minute, Failed), child(2*time.Minute, Succeeded), child(3*time.Minute, Running)},
			want:     "acj-1796378520,acj-1796378400"},
		{name: "children already going are not counted", successful: ptr.To[int32](1),
			children: []Child{child(0, Succeeded, deleting), child(time.Minute, Succeeded)}},
		{name: "no limit keeps everything", children: []Child{child(0, Succeeded), child(time.Minute, Failed)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(Prune(tc.children, tc.successful, tc.failed)); got != tc.want {
				t.Errorf("pruned %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTemplateKind(t *testing.T) {
	job := &batchv1.JobTemplateSpec{}
	bcj := &kruiseappsv1alpha1.BroadcastJobTemplateSpec{}
	ilpj := &kruiseappsv1alpha1.ImageListPullJobTemplateSpec{}
	for _, tc := range []struct {
		name     string
		template kruiseappsv1alpha1.CronJobTemplate
		want     kruiseappsv1alpha1.TemplateKind
	}{
		{name: "a jobTemplate", template: kruiseappsv1alpha1.CronJobTemplate{JobTemplate: job}, want: "Job"},
		{name: "a broadcastJobTemplate", template: kruiseappsv1alpha1.CronJobTemplate{BroadcastJobTemplate: bcj}, want: "BroadcastJob"},
		{name: "an imageListPullJobTemplate", template: kruiseappsv1alpha1.CronJobTemplate{ImageListPullJobTemplate: ilpj}, want: "ImageListPullJob"},
		// The webhook refuses these; the reading is upstream's.
		{name: "none reads as BroadcastJob", want: "BroadcastJob"},
		{name: "a jobTemplate comes first", template: kruiseappsv1alpha1.CronJobTemplate{JobTemplate: job, ImageListPullJobTemplate: ilpj}, want: "Job"},
		{name: "then an imageListPullJobTemplate", template: kruiseappsv1alpha1.CronJobTemplate{BroadcastJobTemplate: bcj, ImageListPullJobTemplate: ilpj},
			want: "ImageListPullJob"},
	} {
		if got := TemplateKind(&kruiseappsv1alpha1.AdvancedCronJobSpec{Template: tc.template}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestNewChildren(t *testing.T) {
	shanghai := zone(t, "Asia/Shanghai")
	run := time.Date(2026, 12, 4, 9, 0, 0, 0, shanghai)
	meta := metav1.ObjectMeta{Labels: map[string]string{"app": "report"}, Annotations: map[string]string{"team": "ops"}}
	acj := &kruiseappsv1alpha1.AdvancedCronJob{ObjectMeta: metav1.ObjectMeta{Name: "acj", Namespace: "ns", UID: "acj-uid"}}
	acj.Spec.Template.JobTemplate = &batchv1.JobTemplateSpec{ObjectMeta: meta, Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](2)}}
	job := NewJob(acj, run)
	acj.Spec.Template.JobTemplate = nil
	acj.Spec.Template.BroadcastJobTemplate = &kruiseappsv1alpha1.BroadcastJobTemplateSpec{ObjectMeta: meta,
		Spec: kruiseappsv1alpha1.BroadcastJobSpec{Paused: true}}
	bcj := NewBroadcastJob(acj, run)
	acj.Spec.Template.BroadcastJobTemplate = nil
	pulls := kruiseappsv1alpha1.ImageListPullJobSpec{Images: []string{"nginx:1.25", "redis:7.0"}}
	pulls.Parallelism, pulls.CompletionPolicy.Type = ptr.To(intstr.FromInt32(5)), kruiseappsv1alpha1.Always
	acj.Spec.Template.ImageListPullJobTemplate = &kruiseappsv1alpha1.ImageListPullJobTemplateSpec{ObjectMeta: meta, Spec: pulls}
	ilpj := NewImageListPullJob(acj, run)
	want := metav1.ObjectMeta{Name: "acj-1796346000", Namespace: "ns", Labels: map[string]string{"app": "report"},
		Annotations: map[string]string{"team": "ops", "apps.kruise.io/scheduled-at": "2026-12-04T09:00:00+08:00"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "AdvancedCronJob", Name: "acj",
			UID: "acj-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}}
	for _, m := range []metav1.ObjectMeta{job.ObjectMeta, bcj.ObjectMeta, ilpj.ObjectMeta} {
		if diff := cmp.Diff(want, m); diff != "" {
			t.Errorf("child metadata (-want +got):\n%s", diff)
		}
	}
	if *job.Spec.BackoffLimit != 2 || !bcj.Spec.Paused {
		t.Errorf("specs not copied: %+v %+v", job.Spec, bcj.Spec)
	}
	if diff := cmp.Diff(pulls, ilpj.Spec); diff != "" {
		t.Errorf("ImageListPullJob spec (-template +child):\n%s", diff)
	}
	meta.Labels["app"] = "changed"
	pulls.Images[0] = "changed"
	if job.Labels["app"] != "report" || ilpj.Labels["app"] != "report" || ilpj.Spec.Images[0] != "nginx:1.25" {
		t.Error("a child shares the template's labels or images")
	}
	if got := ParseScheduledAt(job.Annotations["apps.kruise.io/scheduled-at"]); got == nil || !got.Equal(run) {
		t.Errorf("scheduled-at reads back as %v", got)
	}
	if ParseScheduledAt("yesterday") != nil || ParseScheduledAt("") != nil {
		t.Error("an unreadable annotation reads as a time")
	}
}

// The run carries the schedule's zone, which the child's scheduled-at annotation shows.
func TestRunIsInTheScheduleZone(t *testing.T) {
	for tz, want := range map[string]string{"Asia/Shanghai": "2026-12-04T18:00:00+08:00", "": "2026-12-04T10:00:00Z"} {
		s := spec()
		if tz != "" {
			s.TimeZone = &tz
		}
		p := Decide(Input{Name: "acj", Now: t0.Add(time.Second), Local: time.UTC, Created: t0.Add(-10 * time.Second), Spec: s})
		if p.Run == nil || ScheduledAt(*p.Run) != want {
			t.Errorf("zone %q: run %v, want %s", tz, p.Run, want)
		}
	}
}
