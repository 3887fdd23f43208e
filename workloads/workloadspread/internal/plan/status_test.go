package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(-d)) }

func TestStatus(t *testing.T) {
	finished := pod("done", "a", time.Minute)
	finished.Status.Phase = corev1.PodSucceeded
	cases := []struct {
		name        string
		old         []kruiseappsv1alpha1.WorkloadSpreadSubsetStatus
		pods        []*corev1.Pod
		want        []kruiseappsv1alpha1.WorkloadSpreadSubsetStatus
		wantExpired []Expired
		wantRequeue time.Duration
	}{
		{name: "pods take room; 50% of 4 is 2; unlimited stays -1",
			pods: []*corev1.Pod{pod("p1", "a", 0), pod("p2", "b", 0), pod("p3", "c", 0), pod("other", "", 0), finished},
			want: []kruiseappsv1alpha1.WorkloadSpreadSubsetStatus{
				{Name: "a", Replicas: 1, MissingReplicas: 1}, {Name: "b", Replicas: 1, MissingReplicas: 1},
				{Name: "c", Replicas: 1, MissingReplicas: -1}}},
		{name: "creating entries count until seen or expired",
			old: []kruiseappsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", CreatingPods: map[string]metav1.Time{
				"p1": ago(time.Second), "new": ago(10 * time.Second), "lost": ago(31 * time.Second)}}},
			pods: []*corev1.Pod{pod("p1", "a", 0)},
			want: []kruiseappsv1alpha1.WorkloadSpreadSubsetStatus{
				{Name: "a", Replicas: 1, MissingReplicas: 0, CreatingPods: map[string]metav1.Time{"new": ago(10 * time.Second)}},
				{Name: "b", MissingReplicas: 2}, {Name: "c", MissingReplicas: -1}},
			wantExpired: []Expired{{Subset: "a", Pod: "lost", Creating: true}}, wantRequeue: 20 * time.Second},
		{name: "deleting entries free room until the pod goes or they expire",
			old: []kruiseappsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", DeletingPods: map[string]metav1.Time{
				"p1": ago(5 * time.Second), "p2": ago(16 * time.Second), "gone": ago(time.Second)}}},
			pods: []*corev1.Pod{pod("p1", "a", 0), pod("p2", "a", 0)},
			want: []kruiseappsv1alpha1.WorkloadSpreadSubsetStatus{
				{Name: "a", Replicas: 2, MissingReplicas: 1, DeletingPods: map[string]metav1.Time{"p1": ago(5 * time.Second)}},
				{Name: "b", MissingReplicas: 2}, {Name: "c", MissingReplicas: -1}},
			wantExpired: []Expired{{Subset: "a", Pod: "p2"}}, wantRequeue: 10 * time.Second},
		{name: "a full subset has no room below zero",
			pods: []*corev1.Pod{pod("p1", "a", 0), pod("p2", "a", 0), pod("p3", "a", 0)},
			want: []kruiseappsv1alpha1.WorkloadSpreadSubsetStatus{
				{Name: "a", Replicas: 3, MissingReplicas: 0}, {Name: "b", MissingReplicas: 2}, {Name: "c", MissingReplicas: -1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := spread()
			ws.Status.SubsetStatuses = tc.old
			ws.Generation = 3
			out := Status(Input{WS: ws, Pods: tc.pods, WorkloadReplicas: 4, Now: t0})
			if diff := cmp.Diff(tc.want, out.Status.SubsetStatuses, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("subset statuses (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantExpired, out.Expired, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("expired (-want +got):\n%s", diff)
			}
			if out.RequeueAfter != tc.wantRequeue || out.Status.ObservedGeneration != 3 {
				t.Errorf("requeue %v (want %v), observedGeneration %d", out.RequeueAfter, tc.wantRequeue, out.Status.ObservedGeneration)
			}
		})
	}
}

func TestStatusLeavesAnUnreadableMaxReplicas(t *testing.T) {
	ws := spread(1, 1, -1)
	ws.Spec.Subsets[1].MaxReplicas = intp(intstrFromString("x%"))
	out := Status(Input{WS: ws, WorkloadReplicas: 4, Now: t0})
	if out.Invalid != "b" || !cmp.Equal(out.Status, ws.Status) {
		t.Errorf("outcome %+v", out)
	}
}

func TestAdaptive(t *testing.T) {
	critical := int32(60)
	stuckPod := func(name, subset string, since time.Duration) *corev1.Pod {
		p := pod(name, subset, since)
		p.Spec.NodeName, p.Status.Phase = "", corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, LastTransitionTime: ago(since)}}
		return p
	}
	cond := func(s corev1.ConditionStatus, reason string, at time.Duration) []kruiseappsv1alpha1.WorkloadSpreadSubsetCondition {
		return []kruiseappsv1alpha1.WorkloadSpreadSubsetCondition{{Type: kruiseappsv1alpha1.SubsetSchedulable, Status: s, Reason: reason,
			LastTransitionTime: ago(at)}}
	}
	cases := []struct {
		name       string
		oldA       []kruiseappsv1alpha1.WorkloadSpreadSubsetCondition
		pods       []*corev1.Pod
		wantA      []kruiseappsv1alpha1.WorkloadSpreadSubsetCondition
		reschedule int
		requeue    time.Duration
	}{
		{name: "schedulable", pods: []*corev1.Pod{pod("p", "a", 0)}, wantA: cond(corev1.ConditionTrue, ReasonSchedulable, 0)},
		{name: "pending below the critical time is waited for", pods: []*corev1.Pod{stuckPod("p", "a", 20*time.Second)},
			wantA: cond(corev1.ConditionTrue, ReasonSchedulable, 0), requeue: 40 * time.Second},
		{name: "stuck past it: unschedulable, pod rescheduled", pods: []*corev1.Pod{stuckPod("p", "a", 61*time.Second)},
			wantA: cond(corev1.ConditionFalse, ReasonPodsUnschedulable, 0), reschedule: 1},
		{name: "stays unschedulable for a while", oldA: cond(corev1.ConditionFalse, ReasonPodsUnschedulable, time.Minute),
			wantA: cond(corev1.ConditionFalse, ReasonPodsUnschedulable, time.Minute), requeue: 4 * time.Minute},
		{name: "then may be tried again", oldA: cond(corev1.ConditionFalse, ReasonPodsUnschedulable, 6*time.Minute),
			wantA: cond(corev1.ConditionTrue, ReasonSchedulable, 0)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := spread()
			ws.Spec.ScheduleStrategy = kruiseappsv1alpha1.WorkloadSpreadScheduleStrategy{Type: kruiseappsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType,
				Adaptive: &kruiseappsv1alpha1.AdaptiveWorkloadSpreadStrategy{RescheduleCriticalSeconds: &critical}}
			ws.Status.SubsetStatuses = []kruiseappsv1alpha1.WorkloadSpreadSubsetStatus{{Name: "a", Conditions: tc.oldA}}
			pods := append(tc.pods, stuckPod("last", "c", time.Hour))
			out := Status(Input{WS: ws, Pods: pods, WorkloadReplicas: 4, Now: t0})
			if diff := cmp.Diff(tc.wantA, out.Status.SubsetStatuses[0].Conditions); diff != "" {
				t.Errorf("subset a's conditions (-want +got):\n%s", diff)
			}
			if c := out.Status.SubsetStatuses[2].Conditions; len(c) != 1 || c[0].Status != corev1.ConditionTrue {
				t.Errorf("the last subset's conditions %+v", c)
			}
			if len(out.Reschedule) != tc.reschedule || out.RequeueAfter != tc.requeue {
				t.Errorf("rescheduled %d (want %d), requeue %v (want %v)", len(out.Reschedule), tc.reschedule, out.RequeueAfter, tc.requeue)
			}
		})
	}
}
