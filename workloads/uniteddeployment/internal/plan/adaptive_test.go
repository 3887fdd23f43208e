package plan

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var t0 = time.Unix(1000, 0)

// withSchedulable gives the subset a Schedulable condition of status since at.
func withSchedulable(u *kruiseappsv1alpha1.UnitedDeployment, subset string, status corev1.ConditionStatus, at time.Time) {
	u.Status.SubsetStatuses = append(u.Status.SubsetStatuses, kruiseappsv1alpha1.UnitedDeploymentSubsetStatus{Name: subset,
		Conditions: []kruiseappsv1alpha1.UnitedDeploymentSubsetCondition{{Type: kruiseappsv1alpha1.UnitedDeploymentSubsetSchedulable,
			Status: status, LastTransitionTime: metav1.NewTime(at)}}})
}

func TestSchedulability(t *testing.T) {
	lasts := 300 * time.Second // the defaults; rescheduleCriticalSeconds is 30
	for _, tc := range []struct {
		name          string
		pods          SubsetPods
		previous      corev1.ConditionStatus // "" for none
		since         time.Time
		now           time.Time
		unschedulable bool
		running       int32
		condition     corev1.ConditionStatus // "" for none
		recheck       time.Duration
	}{
		{name: "all placed", pods: SubsetPods{Replicas: 3}, now: t0, running: 3},
		{name: "pending, not yet critical", pods: SubsetPods{Replicas: 3, Pending: []PendingPod{{Created: t0, Unschedulable: true}}},
			now: t0.Add(10 * time.Second), running: 3, recheck: 20 * time.Second},
		{name: "unschedulable past critical", pods: SubsetPods{Replicas: 3, Pending: []PendingPod{{Created: t0, Unschedulable: true}}},
			now: t0.Add(time.Minute), unschedulable: true, running: 2, condition: corev1.ConditionFalse, recheck: lasts},
		{name: "pending past critical but not reported unschedulable", pods: SubsetPods{Replicas: 3, Pending: []PendingPod{{Created: t0}}},
			now: t0.Add(time.Minute), running: 3},
		{name: "still unschedulable within the duration", pods: SubsetPods{Replicas: 2}, previous: corev1.ConditionFalse, since: t0,
			now: t0.Add(100 * time.Second), unschedulable: true, running: 2, condition: corev1.ConditionFalse, recheck: 200 * time.Second},
		{name: "recovered after the duration", pods: SubsetPods{Replicas: 2}, previous: corev1.ConditionFalse, since: t0,
			now: t0.Add(lasts), running: 2, condition: corev1.ConditionTrue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := adaptive(ud(n(6), bounded("a", nil, nil)))
			if tc.previous != "" {
				withSchedulable(u, "a", tc.previous, tc.since)
			}
			got := Schedulability(u, map[string]SubsetPods{"a": tc.pods}, tc.now)
			if c := got.Capacity["a"]; c.Unschedulable != tc.unschedulable || c.Running != tc.running {
				t.Errorf("capacity %+v", c)
			}
			conds := got.Conditions["a"]
			switch {
			case tc.condition == "" && len(conds) > 0, tc.condition != "" && (len(conds) != 1 || conds[0].Status != tc.condition):
				t.Errorf("conditions %+v, want %q", conds, tc.condition)
			}
			if got.Recheck != tc.recheck {
				t.Errorf("recheck %v, want %v", got.Recheck, tc.recheck)
			}
		})
	}
}

// A subset that stays unschedulable keeps the time it became so; under the fixed strategy nothing is
// concluded.
func TestSchedulabilityKeepsTransitionAndIgnoresFixed(t *testing.T) {
	u := adaptive(ud(n(6), bounded("a", nil, nil)))
	withSchedulable(u, "a", corev1.ConditionFalse, t0)
	pods := map[string]SubsetPods{"a": {Replicas: 1, Pending: []PendingPod{{Created: t0, Unschedulable: true}}}}
	got := Schedulability(u, pods, t0.Add(time.Minute))
	if c := got.Conditions["a"]; len(c) != 1 || !c[0].LastTransitionTime.Time.Equal(t0) || c[0].Reason != ReasonReschedule {
		t.Errorf("conditions %+v", c)
	}
	u.Spec.Topology.ScheduleStrategy.Type = kruiseappsv1alpha1.FixedUnitedDeploymentScheduleStrategyType
	if got := Schedulability(u, pods, t0.Add(time.Minute)); len(got.Capacity)+len(got.Conditions) != 0 || got.Recheck != 0 {
		t.Errorf("fixed strategy concluded %+v", got)
	}
}
