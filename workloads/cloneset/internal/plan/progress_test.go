package plan

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestProgress(t *testing.T) {
	const deadline = 10 * time.Second
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	cond := func(status corev1.ConditionStatus, reason kruiseappsv1alpha1.CloneSetConditionReason, msg string, updated, transitioned metav1.Time) *kruiseappsv1alpha1.CloneSetCondition {
		return &kruiseappsv1alpha1.CloneSetCondition{Type: kruiseappsv1alpha1.CloneSetConditionTypeProgressing, Status: status,
			Reason: string(reason), Message: msg, LastUpdateTime: updated, LastTransitionTime: transitioned}
	}
	progressingSince := func(ago time.Duration) *kruiseappsv1alpha1.CloneSetCondition {
		return cond(corev1.ConditionTrue, kruiseappsv1alpha1.CloneSetProgressUpdated, msgProgressing, at(ago), at(ago))
	}
	// counts: replicas, available, updatedAvailable, expectedUpdated; revisions v1 → v2.
	counts := func(replicas, available, updatedAvailable, expected int32) kruiseappsv1alpha1.CloneSetStatus {
		return kruiseappsv1alpha1.CloneSetStatus{Replicas: replicas, AvailableReplicas: available, UpdatedAvailableReplicas: updatedAvailable,
			ExpectedUpdatedReplicas: expected, UpdateRevision: "v2", CurrentRevision: "v1"}
	}
	withDeadline := func(s *kruiseappsv1alpha1.CloneSetSpec) { s.ProgressDeadlineSeconds = ptr.To[int32](10) }
	cases := []struct {
		name    string
		cs      *kruiseappsv1alpha1.CloneSet
		prev    *kruiseappsv1alpha1.CloneSetCondition
		status  kruiseappsv1alpha1.CloneSetStatus
		want    *kruiseappsv1alpha1.CloneSetCondition
		requeue time.Duration
	}{
		{name: "no deadline removes the condition", cs: cloneSet(4), prev: progressingSince(time.Minute), status: counts(4, 2, 1, 4)},
		{name: "MaxInt32 means never", cs: cloneSet(4, func(s *kruiseappsv1alpha1.CloneSetSpec) { s.ProgressDeadlineSeconds = ptr.To[int32](math.MaxInt32) }),
			status: counts(4, 2, 1, 4)},
		{name: "an update starts the clock", cs: cloneSet(4, withDeadline), status: counts(4, 4, 0, 4),
			want: progressingSince(0), requeue: deadline + time.Second},
		{name: "still within the deadline keeps the start", cs: cloneSet(4, withDeadline), prev: progressingSince(4 * time.Second),
			status: counts(4, 3, 1, 4), want: progressingSince(4 * time.Second), requeue: 7 * time.Second},
		{name: "past the deadline", cs: cloneSet(4, withDeadline), prev: progressingSince(11 * time.Second), status: counts(4, 3, 1, 4),
			want: cond(corev1.ConditionFalse, kruiseappsv1alpha1.CloneSetProgressDeadlineExceeded, "CloneSet revision v2 has timed out progressing", at(0), at(0))},
		{name: "a timed-out revision stays timed out", cs: cloneSet(4, withDeadline),
			prev:   cond(corev1.ConditionFalse, kruiseappsv1alpha1.CloneSetProgressDeadlineExceeded, "CloneSet revision v2 has timed out progressing", at(time.Hour), at(time.Hour)),
			status: counts(4, 3, 1, 4),
			want:   cond(corev1.ConditionFalse, kruiseappsv1alpha1.CloneSetProgressDeadlineExceeded, "CloneSet revision v2 has timed out progressing", at(time.Hour), at(time.Hour))},
		{name: "a new revision after a time-out starts again", cs: cloneSet(4, withDeadline),
			prev:   cond(corev1.ConditionFalse, kruiseappsv1alpha1.CloneSetProgressDeadlineExceeded, "CloneSet revision v1 has timed out progressing", at(time.Hour), at(time.Hour)),
			status: counts(4, 3, 0, 4), want: progressingSince(0), requeue: deadline + time.Second},
		{name: "complete", cs: cloneSet(4, withDeadline), prev: progressingSince(5 * time.Second), status: counts(4, 4, 4, 4),
			want: cond(corev1.ConditionTrue, kruiseappsv1alpha1.CloneSetAvailable, msgAvailable, at(0), at(5*time.Second))},
		{name: "partition reached", cs: cloneSet(10, withDeadline, func(s *kruiseappsv1alpha1.CloneSetSpec) {
			s.UpdateStrategy.Partition = ptr.To(intstr.FromString("90%"))
		}), prev: progressingSince(5 * time.Second), status: counts(10, 10, 1, 1),
			want: cond(corev1.ConditionTrue, kruiseappsv1alpha1.CloneSetProgressPartitionAvailable, msgPartitionAvailable, at(0), at(5*time.Second))},
		{name: "paused stops the clock", cs: cloneSet(4, withDeadline, func(s *kruiseappsv1alpha1.CloneSetSpec) { s.UpdateStrategy.Paused = true }),
			prev: progressingSince(time.Hour), status: counts(4, 2, 1, 4),
			want: cond(corev1.ConditionTrue, kruiseappsv1alpha1.CloneSetProgressPaused, msgPaused, at(0), at(time.Hour))},
		{name: "scaling up is progress", cs: cloneSet(10, withDeadline),
			prev:   cond(corev1.ConditionTrue, kruiseappsv1alpha1.CloneSetAvailable, msgAvailable, at(time.Hour), at(time.Hour)),
			status: counts(5, 5, 5, 10), want: cond(corev1.ConditionTrue, kruiseappsv1alpha1.CloneSetProgressUpdated, msgProgressing, at(0), at(time.Hour)),
			requeue: deadline + time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status := tc.status
			failed := kruiseappsv1alpha1.CloneSetCondition{Type: kruiseappsv1alpha1.CloneSetConditionFailedScale, Status: corev1.ConditionTrue}
			status.Conditions = []kruiseappsv1alpha1.CloneSetCondition{failed}
			if tc.prev != nil {
				status.Conditions = append(status.Conditions, *tc.prev)
			}
			requeue := Progress(tc.cs, &status, now)
			if requeue != tc.requeue {
				t.Errorf("requeue = %v, want %v", requeue, tc.requeue)
			}
			if diff := cmp.Diff(tc.want, Condition(&status, kruiseappsv1alpha1.CloneSetConditionTypeProgressing)); diff != "" {
				t.Errorf("Progressing (-want +got):\n%s", diff)
			}
			if c := Condition(&status, kruiseappsv1alpha1.CloneSetConditionFailedScale); c == nil || *c != failed {
				t.Errorf("other conditions must stay: %v", status.Conditions)
			}
		})
	}
}
