package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/workloads/advancedcronjob/internal/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestImageListPullJobState(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC))
	done := metav1.NewTime(started.Add(5 * time.Minute))
	failed := []*kruiseappsv1alpha1.FailedImageStatus{{ImagePullJob: "acj-1-abc", Name: "redis:7.0", Message: "job has completed; 1 failed"}}
	for _, tc := range []struct {
		name   string
		status kruiseappsv1alpha1.ImageListPullJobStatus
		want   plan.State
	}{
		{name: "not picked up yet", want: plan.Running},
		{name: "pulling", status: kruiseappsv1alpha1.ImageListPullJobStatus{StartTime: &started, Desired: 2, Active: 2}, want: plan.Running},
		{name: "every image's job finished but the list not yet", status: kruiseappsv1alpha1.ImageListPullJobStatus{StartTime: &started,
			Desired: 2, Completed: 2, Succeeded: 2}, want: plan.Running},
		{name: "a failed image while the others pull", status: kruiseappsv1alpha1.ImageListPullJobStatus{StartTime: &started,
			Desired: 2, Active: 1, Completed: 1, FailedImageStatuses: failed}, want: plan.Running},
		{name: "every image on every node", status: kruiseappsv1alpha1.ImageListPullJobStatus{StartTime: &started, CompletionTime: &done,
			Desired: 2, Completed: 2, Succeeded: 2}, want: plan.Succeeded},
		{name: "an image failed on a node", status: kruiseappsv1alpha1.ImageListPullJobStatus{StartTime: &started, CompletionTime: &done,
			Desired: 2, Completed: 2, Succeeded: 1, FailedImageStatuses: failed}, want: plan.Failed},
		{name: "fewer succeeded than desired, no failure listed", status: kruiseappsv1alpha1.ImageListPullJobStatus{StartTime: &started,
			CompletionTime: &done, Desired: 2, Completed: 2, Succeeded: 1}, want: plan.Failed},
		{name: "a failure listed, every count succeeded", status: kruiseappsv1alpha1.ImageListPullJobStatus{StartTime: &started,
			CompletionTime: &done, Desired: 2, Completed: 2, Succeeded: 2, FailedImageStatuses: failed}, want: plan.Failed},
	} {
		job := &kruiseappsv1alpha1.ImageListPullJob{Status: tc.status}
		state, start := observe(job)
		if state != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, state, tc.want)
		}
		if start != tc.status.StartTime {
			t.Errorf("%s: start time %v, want status.startTime %v", tc.name, start, tc.status.StartTime)
		}
	}
}
