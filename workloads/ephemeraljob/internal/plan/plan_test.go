package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func parallelism(n int32) func(*kruiseappsv1alpha1.EphemeralJob) {
	return func(j *kruiseappsv1alpha1.EphemeralJob) { j.Spec.Parallelism = ptr.To(n) }
}

func TestToInject(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  *kruiseappsv1alpha1.EphemeralJob
		pods []*corev1.Pod
		want []string
	}{{
		name: "default parallelism injects one pod at a time", job: newJob(),
		pods: []*corev1.Pod{newPod("a", 1), newPod("b", 2)}, want: []string{"a"},
	}, {
		name: "a waiting injected container holds the slot", job: newJob(),
		pods: []*corev1.Pod{newPod("a", 1, ours(nil)), newPod("b", 2)}, want: []string{},
	}, {
		name: "a running one holds it too", job: newJob(),
		pods: []*corev1.Pod{newPod("a", 1, ours(running)), newPod("b", 2)}, want: []string{},
	}, {
		name: "finished ones free their slots", job: newJob(parallelism(2)),
		pods: []*corev1.Pod{newPod("a", 1, ours(succeeded)), newPod("b", 2, ours(failed)), newPod("c", 3), newPod("d", 4), newPod("e", 5)},
		want: []string{"c", "d"},
	}, {
		name: "parallelism beyond the pods left", job: newJob(parallelism(5)),
		pods: []*corev1.Pod{newPod("a", 1, ours(running)), newPod("b", 2), newPod("c", 3)}, want: []string{"b", "c"},
	}, {
		name: "parallelism 0 injects nothing", job: newJob(parallelism(0)),
		pods: []*corev1.Pod{newPod("a", 1)}, want: []string{},
	}, {
		name: "lowered parallelism waits for running ones", job: newJob(parallelism(1)),
		pods: []*corev1.Pod{newPod("a", 1, ours(running)), newPod("b", 2, ours(running)), newPod("c", 3)}, want: []string{},
	}, {
		name: "a pod missing one of two containers gets it, holding its slot", job: newJob(twoContainers, parallelism(2)),
		pods: []*corev1.Pod{newPod("a", 1, ours(succeeded)), newPod("b", 2), newPod("c", 3)}, want: []string{"a"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(ToInject(tc.job, tc.pods))); diff != "" {
				t.Errorf("inject (-want +got):\n%s", diff)
			}
		})
	}
}

func started(at time.Time) func(*kruiseappsv1alpha1.EphemeralJob) {
	return func(j *kruiseappsv1alpha1.EphemeralJob) { j.Status.StartTime = ptr.To(metav1.NewTime(at)) }
}

func deadline(s int64) func(*kruiseappsv1alpha1.EphemeralJob) {
	return func(j *kruiseappsv1alpha1.EphemeralJob) { j.Spec.ActiveDeadlineSeconds = ptr.To(s) }
}

func paused(j *kruiseappsv1alpha1.EphemeralJob) { j.Spec.Paused = true }

func TestNextStatusPhase(t *testing.T) {
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		name     string
		job      *kruiseappsv1alpha1.EphemeralJob
		counts   Counts
		want     kruiseappsv1alpha1.EphemeralJobPhase
		complete bool
		// cond is the condition the phase sets (with its reason), if any.
		cond   kruiseappsv1alpha1.EphemeralJobConditionType
		reason string
	}{
		{name: "no match waits", job: newJob(), counts: Counts{}, want: kruiseappsv1alpha1.EphemeralJobWaiting,
			cond: kruiseappsv1alpha1.EJobMatchedEmpty, reason: ReasonMatchEmpty},
		{name: "a running target runs", job: newJob(), counts: Counts{Matches: 3, Running: 1, Waiting: 1, Succeeded: 1},
			want: kruiseappsv1alpha1.EphemeralJobRunning},
		{name: "a waiting target waits", job: newJob(), counts: Counts{Matches: 2, Waiting: 1, Failed: 1},
			want: kruiseappsv1alpha1.EphemeralJobWaiting, cond: kruiseappsv1alpha1.EJobFailed, reason: ReasonContainerFailed},
		{name: "all succeeded", job: newJob(), counts: Counts{Matches: 2, Succeeded: 2},
			want: kruiseappsv1alpha1.EphemeralJobSucceeded, complete: true, cond: kruiseappsv1alpha1.EJobSucceeded, reason: ReasonJobSucceeded},
		{name: "all finished, one failed", job: newJob(), counts: Counts{Matches: 2, Succeeded: 1, Failed: 1},
			want: kruiseappsv1alpha1.EphemeralJobFailed, complete: true, cond: kruiseappsv1alpha1.EJobFailed, reason: ReasonJobFailed},
		{name: "unknown targets", job: newJob(), counts: Counts{Matches: 2, Succeeded: 1},
			want: kruiseappsv1alpha1.EphemeralJobUnknown},
		{name: "paused", job: newJob(paused), counts: Counts{Matches: 2, Running: 1, Waiting: 1},
			want: kruiseappsv1alpha1.EphemeralJobPause},
		{name: "paused does not hold a finished job", job: newJob(paused), counts: Counts{Matches: 1, Succeeded: 1},
			want: kruiseappsv1alpha1.EphemeralJobSucceeded, complete: true, cond: kruiseappsv1alpha1.EJobSucceeded, reason: ReasonJobSucceeded},
		{name: "paused escapes the deadline, as upstream", job: newJob(paused, deadline(60), started(t0)), counts: Counts{Matches: 1, Running: 1},
			want: kruiseappsv1alpha1.EphemeralJobPause},
		{name: "past the deadline fails", job: newJob(deadline(3600), started(t0)), counts: Counts{Matches: 1, Running: 1},
			want: kruiseappsv1alpha1.EphemeralJobFailed, complete: true, cond: kruiseappsv1alpha1.EJobFailed, reason: ReasonDeadlineExceeded},
		{name: "before the deadline runs", job: newJob(deadline(3601), started(t0)), counts: Counts{Matches: 1, Running: 1},
			want: kruiseappsv1alpha1.EphemeralJobRunning},
		{name: "no match past the deadline fails", job: newJob(deadline(10), started(t0)), counts: Counts{},
			want: kruiseappsv1alpha1.EphemeralJobFailed, complete: true, cond: kruiseappsv1alpha1.EJobFailed, reason: ReasonDeadlineExceeded},
		{name: "no containers is an error", job: newJob(func(j *kruiseappsv1alpha1.EphemeralJob) { j.Spec.Template.EphemeralContainers = nil }),
			counts: Counts{Matches: 1}, want: kruiseappsv1alpha1.EphemeralJobError, cond: kruiseappsv1alpha1.EJobError, reason: ReasonError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NextStatus(tc.job, tc.counts, now)
			if s.Phase != tc.want {
				t.Errorf("phase %q, want %q", s.Phase, tc.want)
			}
			if (s.CompletionTime != nil) != tc.complete || (tc.complete && !s.CompletionTime.Time.Equal(now)) {
				t.Errorf("completionTime %v, want completed %v at %v", s.CompletionTime, tc.complete, now)
			}
			if got := condition(&s, kruiseappsv1alpha1.EJobInitialized); got.Status != corev1.ConditionTrue {
				t.Errorf("Initialized %+v", got)
			}
			if tc.cond != "" {
				if got := condition(&s, tc.cond); got.Status != corev1.ConditionTrue || got.Reason != tc.reason {
					t.Errorf("condition %s: %+v, want True %s", tc.cond, got, tc.reason)
				}
			}
			if s.Matches != tc.counts.Matches || s.Running != tc.counts.Running || s.Waiting != tc.counts.Waiting ||
				s.Succeeded != tc.counts.Succeeded || s.Failed != tc.counts.Failed {
				t.Errorf("counters %+v, want %+v", s, tc.counts)
			}
		})
	}
}

func TestNextStatusKeepsTimes(t *testing.T) {
	job := newJob()
	first := NextStatus(job, Counts{}, t0)
	if !first.StartTime.Time.Equal(t0) {
		t.Errorf("startTime %v, want %v", first.StartTime, t0)
	}
	job.Status = first
	again := NextStatus(job, Counts{}, t0.Add(time.Minute))
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("an unchanged job's status changed (-first +again):\n%s", diff)
	}
	job.Status = again
	matched := NextStatus(job, Counts{Matches: 1, Waiting: 1}, t0.Add(2*time.Minute))
	c := condition(&matched, kruiseappsv1alpha1.EJobMatchedEmpty)
	if c.Status != corev1.ConditionFalse || c.Reason != ReasonMatched || !c.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("MatchedEmpty once pods match: %+v", c)
	}
	if !matched.StartTime.Time.Equal(t0) {
		t.Errorf("startTime moved to %v", matched.StartTime)
	}
}

func TestMake(t *testing.T) {
	now := t0.Add(time.Minute)
	pods := []*corev1.Pod{newPod("a", 1), newPod("b", 2)}
	for _, tc := range []struct {
		name   string
		job    *kruiseappsv1alpha1.EphemeralJob
		inject []string
		wake   time.Duration
	}{
		{name: "injects and has no deadline", job: newJob(), inject: []string{"a"}},
		{name: "wakes at the deadline", job: newJob(deadline(90), started(t0)), inject: []string{"a"}, wake: 30 * time.Second},
		{name: "past the deadline injects nothing", job: newJob(deadline(60), started(t0)), inject: []string{}},
		{name: "paused injects nothing", job: newJob(paused), inject: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Make(Input{Job: tc.job, Pods: pods, Now: now})
			if diff := cmp.Diff(tc.inject, names(p.Inject)); diff != "" {
				t.Errorf("inject (-want +got):\n%s", diff)
			}
			if p.Wake != tc.wake {
				t.Errorf("wake %v, want %v", p.Wake, tc.wake)
			}
		})
	}
	done := Make(Input{Job: newJob(parallelism(2)), Pods: []*corev1.Pod{newPod("a", 1, ours(succeeded)), newPod("x", 2, withEC("debug", "", nil))}, Now: now})
	if done.Status.Phase != kruiseappsv1alpha1.EphemeralJobSucceeded || len(done.Inject) != 0 || diffNames(done.Conflicts, "x") {
		t.Errorf("finished job: phase %s, inject %v, conflicts %v", done.Status.Phase, names(done.Inject), names(done.Conflicts))
	}
}

func diffNames(pods []*corev1.Pod, want ...string) bool { return !cmp.Equal(names(pods), want) }

func TestExpiry(t *testing.T) {
	finished := func(ttl *int32) *kruiseappsv1alpha1.EphemeralJob {
		return newJob(func(j *kruiseappsv1alpha1.EphemeralJob) {
			j.Spec.TTLSecondsAfterFinished = ttl
			j.Status.CompletionTime = ptr.To(metav1.NewTime(t0))
		})
	}
	for _, tc := range []struct {
		name string
		ttl  *int32
		now  time.Time
		want time.Duration
	}{
		{name: "default 1800s", now: t0.Add(10 * time.Minute), want: 20 * time.Minute},
		{name: "ttl 60s", ttl: ptr.To[int32](60), now: t0.Add(10 * time.Second), want: 50 * time.Second},
		{name: "ttl 0 expires at once", ttl: ptr.To[int32](0), now: t0, want: 0},
		{name: "past it", ttl: ptr.To[int32](60), now: t0.Add(2 * time.Minute), want: -time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Expiry(finished(tc.ttl), tc.now); got != tc.want {
				t.Errorf("expiry %v, want %v", got, tc.want)
			}
		})
	}
}
