package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// A Job per run, named after its scheduled time and carrying it, which kube's Job controller runs to
// completion; after three hours of downtime one run starts, not 180 (with a warning), and a job created by
// hand from the template is neither counted nor pruned.
func TestJobsOnSchedule(t *testing.T) {
	t.Parallel()
	e := start(t)
	acj := e.newAdvancedCronJob("*/1 * * * *", withJobTemplate)
	manual := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "manual",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "AdvancedCronJob", Name: acj.Name, UID: acj.UID}}},
		Spec: *acj.Spec.Template.JobTemplate.Spec.DeepCopy()}
	e.create(manual)

	first := nextMinute(acj.CreationTimestamp.Time)
	e.advance(acj, first.Add(2*time.Second))
	status := e.waitFor(acj, []string{childAt(first), "manual"}, []string{childAt(first)}, &first)
	if status.Type != kruiseappsv1alpha1.JobTemplate || status.Active[0].Kind != "Job" || status.Active[0].APIVersion != "batch/v1" {
		t.Errorf("status %+v", status)
	}
	job := &batchv1.Job{}
	if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: childAt(first)}, job); err != nil {
		t.Fatal(err)
	}
	owner := metav1.GetControllerOf(job)
	if job.Labels["app"] != "report" || job.Annotations["team"] != "ops" || job.Annotations[kruiseappsv1alpha1.ScheduledAtAnnotationKey] != first.UTC().Format(time.RFC3339) ||
		owner == nil || owner.UID != acj.UID || !ptr.Deref(owner.BlockOwnerDeletion, false) {
		t.Errorf("job metadata %+v", job.ObjectMeta)
	}
	e.waitEvent(acj, reasonSuccessfulCreate, "Created job "+childAt(first))

	// kube's Job controller completes it.
	e.waitFor(acj, []string{childAt(first), "manual"}, nil, &first)
	e.waitEvent(acj, reasonSawCompletedJob, fmt.Sprintf("Saw completed job: %s, condition: Complete", childAt(first)))

	later := first.Add(3 * time.Hour)
	e.advance(acj, later.Add(5*time.Second))
	e.waitFor(acj, []string{childAt(first), childAt(later), "manual"}, []string{childAt(later)}, &later)
	e.waitEvent(acj, reasonTooManyMissedTimes, "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
}

// Forbid skips a run while the last one runs and starts it once that one finished; Replace deletes the
// running child for the new one.
func TestConcurrencyPolicies(t *testing.T) {
	t.Parallel()
	t.Run("Forbid", func(t *testing.T) {
		t.Parallel()
		e := start(t)
		acj := e.newAdvancedCronJob("*/1 * * * *", func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			a.Spec.ConcurrencyPolicy = kruiseappsv1alpha1.ForbidConcurrent
		})
		first := nextMinute(acj.CreationTimestamp.Time)
		second := first.Add(time.Minute)
		e.advance(acj, first.Add(time.Second))
		e.waitFor(acj, []string{childAt(first)}, []string{childAt(first)}, &first)
		e.advance(acj, second.Add(time.Second))
		e.waitEvent(acj, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
		e.waitFor(acj, []string{childAt(first)}, []string{childAt(first)}, &first)
		e.finish(childAt(first), kruiseappsv1alpha1.JobComplete, first)
		e.waitFor(acj, []string{childAt(first), childAt(second)}, []string{childAt(second)}, &second)
	})
	t.Run("Replace", func(t *testing.T) {
		t.Parallel()
		e := start(t)
		acj := e.newAdvancedCronJob("*/1 * * * *", func(a *kruiseappsv1alpha1.AdvancedCronJob) {
			a.Spec.ConcurrencyPolicy = kruiseappsv1alpha1.ReplaceConcurrent
		})
		first := nextMinute(acj.CreationTimestamp.Time)
		second := first.Add(time.Minute)
		e.advance(acj, first.Add(time.Second))
		e.waitFor(acj, []string{childAt(first)}, []string{childAt(first)}, &first)
		e.advance(acj, second.Add(time.Second))
		e.waitFor(acj, []string{childAt(second)}, []string{childAt(second)}, &second)
		e.waitEvent(acj, reasonSuccessfulDelete, "Deleted job "+childAt(first))
	})
}

// A run older than startingDeadlineSeconds does not start (with a warning); the next one, on time, does.
func TestStartingDeadline(t *testing.T) {
	t.Parallel()
	e := start(t)
	acj := e.newAdvancedCronJob("*/1 * * * *", func(a *kruiseappsv1alpha1.AdvancedCronJob) {
		a.Spec.StartingDeadlineSeconds = ptr.To[int64](10)
	})
	first := nextMinute(acj.CreationTimestamp.Time)
	e.advance(acj, first.Add(30*time.Second))
	e.waitEvent(acj, "MissSchedule", "Missed scheduled time to start a job: "+first.UTC().Format(time.RFC1123Z))
	e.waitFor(acj, nil, nil, nil)
	second := first.Add(time.Minute)
	e.advance(acj, second.Add(5*time.Second))
	e.waitFor(acj, []string{childAt(second)}, []string{childAt(second)}, &second)
}

// Finished children beyond the history limits go, the earliest started first, and the last run stays
// remembered once its child is gone: it never starts again.
func TestHistoryLimits(t *testing.T) {
	t.Parallel()
	e := start(t)
	acj := e.newAdvancedCronJob("*/1 * * * *", func(a *kruiseappsv1alpha1.AdvancedCronJob) {
		a.Spec.SuccessfulJobsHistoryLimit, a.Spec.FailedJobsHistoryLimit = ptr.To[int32](1), ptr.To[int32](0)
	})
	first := nextMinute(acj.CreationTimestamp.Time)
	var runs []string
	for i, outcome := range []kruiseappsv1alpha1.JobConditionType{kruiseappsv1alpha1.JobComplete, kruiseappsv1alpha1.JobComplete, kruiseappsv1alpha1.JobFailed} {
		run := first.Add(time.Duration(i) * time.Minute)
		e.advance(acj, run.Add(time.Second))
		e.waitFor(acj, append(append([]string(nil), runs...), childAt(run)), []string{childAt(run)}, &run)
		e.finish(childAt(run), outcome, run)
		if outcome == kruiseappsv1alpha1.JobComplete {
			runs = []string{childAt(run)} // the earlier successful one goes
		}
		e.waitFor(acj, runs, nil, &run)
	}
	e.waitEvent(acj, reasonSuccessfulDelete, "Deleted job "+childAt(first))
	e.waitEvent(acj, reasonSuccessfulDelete, "Deleted job "+childAt(first.Add(2*time.Minute)))
	// Every child but one is gone; the status remembers the last run, so nothing is due.
	e.advance(acj, first.Add(2*time.Minute+30*time.Second))
	e.waitFor(acj, runs, nil, ptr.To(first.Add(2*time.Minute)))
}

// A paused AdvancedCronJob starts nothing; resumed, it starts the most recent run it missed. A schedule in a
// zone runs at that zone's hour, and its children say so.
func TestPausedAndTimeZone(t *testing.T) {
	t.Parallel()
	e := start(t)
	acj := e.newAdvancedCronJob("0 9 * * *", func(a *kruiseappsv1alpha1.AdvancedCronJob) {
		a.Spec.TimeZone, a.Spec.Paused = ptr.To("Asia/Shanghai"), ptr.To(true)
	})
	// 09:00 in Shanghai is 01:00 UTC.
	nine := acj.CreationTimestamp.UTC().Truncate(24 * time.Hour).Add(25 * time.Hour)
	e.advance(acj, nine.Add(time.Minute))
	e.eventually("the paused AdvancedCronJob to report its type and start nothing", func(ctx context.Context) (bool, error) {
		s, names, err := e.state(ctx, acj)
		return err == nil && s.Type == kruiseappsv1alpha1.BroadcastJobTemplate && len(names) == 0, fmt.Errorf("%+v %v %w", s, names, err)
	})
	managertest.Update(t, e.c, acj.DeepCopy(), func(resume *kruiseappsv1alpha1.AdvancedCronJob) { resume.Spec.Paused = ptr.To(false) })
	e.waitFor(acj, []string{childAt(nine)}, []string{childAt(nine)}, &nine)
	bcj := &kruiseappsv1alpha1.BroadcastJob{}
	if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: childAt(nine)}, bcj); err != nil {
		t.Fatal(err)
	}
	want := nine.In(time.FixedZone("CST", 8*3600)).Format(time.RFC3339)
	if got := bcj.Annotations[kruiseappsv1alpha1.ScheduledAtAnnotationKey]; got != want || bcj.Labels["app"] != "report" ||
		bcj.Spec.Template.Spec.Containers[0].Image != "busybox:latest" {
		t.Errorf("scheduled-at %q (want %q), %+v", got, want, bcj.ObjectMeta)
	}
}

// A schedule that parses but never comes is reported, and nothing runs.
func TestScheduleThatNeverRuns(t *testing.T) {
	t.Parallel()
	e := start(t)
	acj := e.newAdvancedCronJob("0 0 30 2 *")
	e.advance(acj, acj.CreationTimestamp.Add(time.Hour))
	e.waitEvent(acj, "InvalidSchedule", "the schedule has no run within five years")
	e.waitFor(acj, nil, nil, nil)
}

// An ImageListPullJob per run, with the template's metadata and spec, listed as active until the test writes
// its status as finished (no ImageListPullJob controller runs); finished ones go beyond the history limits by
// their outcome, a failed image making a failed run. The schedule is hourly, so that the controller's own
// wake-up comes long after the waits: the watch on ImageListPullJobs is what sees them finish.
func TestImageListPullJobsOnSchedule(t *testing.T) {
	t.Parallel()
	e := start(t)
	acj := e.newAdvancedCronJob("0 * * * *", withImageListTemplate, func(a *kruiseappsv1alpha1.AdvancedCronJob) {
		a.Spec.SuccessfulJobsHistoryLimit, a.Spec.FailedJobsHistoryLimit = ptr.To[int32](1), ptr.To[int32](0)
	})
	first := acj.CreationTimestamp.Truncate(time.Hour).Add(time.Hour)
	e.advance(acj, first.Add(2*time.Second))
	status := e.waitFor(acj, []string{childAt(first)}, []string{childAt(first)}, &first)
	if status.Type != kruiseappsv1alpha1.ImageListPullJobTemplate || status.Active[0].Kind != "ImageListPullJob" ||
		status.Active[0].APIVersion != "apps.kruise.io/v1alpha1" {
		t.Errorf("status %+v", status)
	}
	job := &kruiseappsv1alpha1.ImageListPullJob{}
	if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: childAt(first)}, job); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(acj.Spec.Template.ImageListPullJobTemplate.Spec, job.Spec); diff != "" {
		t.Errorf("ImageListPullJob spec (-template +created):\n%s", diff)
	}
	owner := metav1.GetControllerOf(job)
	if job.Labels["app"] != "prefetch" || job.Annotations["team"] != "ops" ||
		job.Annotations[kruiseappsv1alpha1.ScheduledAtAnnotationKey] != first.UTC().Format(time.RFC3339) || owner == nil || owner.UID != acj.UID {
		t.Errorf("ImageListPullJob metadata %+v", job.ObjectMeta)
	}
	e.waitEvent(acj, reasonSuccessfulCreate, "Created job "+childAt(first))

	e.finishImageList(childAt(first), true, first.Add(time.Second))
	e.waitFor(acj, []string{childAt(first)}, nil, &first)
	e.waitEvent(acj, reasonSawCompletedJob, fmt.Sprintf("Saw completed job: %s, condition: Complete", childAt(first)))

	// The second success leaves one: the first goes.
	second := first.Add(time.Hour)
	e.advance(acj, second.Add(time.Second))
	e.waitFor(acj, []string{childAt(first), childAt(second)}, []string{childAt(second)}, &second)
	e.finishImageList(childAt(second), true, second.Add(time.Second))
	e.waitFor(acj, []string{childAt(second)}, nil, &second)
	e.waitEvent(acj, reasonSuccessfulDelete, "Deleted job "+childAt(first))

	// A failed image fails the run, and no failed run is kept.
	third := second.Add(time.Hour)
	e.advance(acj, third.Add(time.Second))
	e.waitFor(acj, []string{childAt(second), childAt(third)}, []string{childAt(third)}, &third)
	e.finishImageList(childAt(third), false, third.Add(time.Second))
	e.waitFor(acj, []string{childAt(second)}, nil, &third)
	e.waitEvent(acj, reasonSawCompletedJob, fmt.Sprintf("Saw completed job: %s, condition: Failed", childAt(third)))
	e.waitEvent(acj, reasonSuccessfulDelete, "Deleted job "+childAt(third))
}
