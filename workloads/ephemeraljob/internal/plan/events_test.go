package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestEvents(t *testing.T) {
	status := func(job *kruiseappsv1alpha1.EphemeralJob, c Counts) *kruiseappsv1alpha1.EphemeralJobStatus {
		s := NextStatus(job, c, t0)
		return &s
	}
	empty := &kruiseappsv1alpha1.EphemeralJobStatus{}
	running := status(newJob(), Counts{Matches: 2, Running: 1, Waiting: 1})
	for _, tc := range []struct {
		name      string
		old, next *kruiseappsv1alpha1.EphemeralJobStatus
		want      []string
	}{
		{name: "starting to run is not an event", old: empty, next: running, want: nil},
		{name: "no change", old: running, next: running, want: nil},
		{name: "matching nothing", old: empty, next: status(newJob(), Counts{}), want: []string{"Normal MatchedEmpty"}},
		{name: "a target failed", old: running, next: status(newJob(), Counts{Matches: 2, Running: 1, Failed: 1}),
			want: []string{"Warning ContainerFailed"}},
		{name: "succeeded", old: running, next: status(newJob(), Counts{Matches: 2, Succeeded: 2}), want: []string{"Normal JobSucceeded"}},
		{name: "failed at the end", old: running, next: status(newJob(), Counts{Matches: 2, Succeeded: 1, Failed: 1}),
			want: []string{"Warning ContainerFailed", "Warning JobFailed"}},
		{name: "deadline", old: running, next: status(newJob(deadline(0), started(t0)), Counts{Matches: 2, Running: 1, Waiting: 1}),
			want: []string{"Warning DeadlineExceeded"}},
		{name: "paused", old: running, next: status(newJob(paused), Counts{Matches: 2, Running: 1, Waiting: 1}), want: []string{"Normal Paused"}},
		{name: "resumed", old: status(newJob(paused), Counts{Matches: 2, Running: 1, Waiting: 1}), next: running, want: []string{"Normal Resumed"}},
		{name: "error", old: empty, next: status(newJob(func(j *kruiseappsv1alpha1.EphemeralJob) { j.Spec.Template.EphemeralContainers = nil }), Counts{Matches: 1}),
			want: []string{"Warning JobError"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range Events(tc.old, tc.next) {
				got = append(got, e.Type+" "+e.Reason)
				if e.Note == "" || (e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning) {
					t.Errorf("event %+v", e)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
