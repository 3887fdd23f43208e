package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// SubsetPods is what the adaptive strategy reads of one subset's pods: how many there are, and when each
// pod the scheduler has not placed yet was created, with whether the scheduler reported it Unschedulable.
type SubsetPods struct {
	Replicas int32
	Pending  []PendingPod
}

// PendingPod is a pod without a node.
type PendingPod struct {
	Created       time.Time
	Unschedulable bool
}

// Adaptive is what the adaptive strategy concludes: each subset's capacity for the allocator, its
// Schedulable condition for the status, and when to look again (0: no need).
type Adaptive struct {
	Capacity   map[string]Capacity
	Conditions map[string][]kruiseappsv1alpha1.UnitedDeploymentSubsetCondition
	Recheck    time.Duration
}

// Reasons of the subsets' Schedulable condition: upstream's.
const (
	ReasonReschedule = "reschedule"
	ReasonRecover    = "recover"
)

// Schedulability applies upstream's adaptive rules: a subset with a pod the scheduler reported
// Unschedulable for longer than rescheduleCriticalSeconds becomes unschedulable (Schedulable False) and
// stays so for unschedulableDuration, then recovers; an unschedulable subset runs only the pods it has
// placed, and the allocator gives the rest to the others. Under the fixed strategy it concludes nothing.
func Schedulability(ud *kruiseappsv1alpha1.UnitedDeployment, pods map[string]SubsetPods, now time.Time) Adaptive {
	out := Adaptive{Capacity: map[string]Capacity{}, Conditions: map[string][]kruiseappsv1alpha1.UnitedDeploymentSubsetCondition{}}
	strategy := &ud.Spec.Topology.ScheduleStrategy
	if !strategy.IsAdaptive() {
		return out
	}
	for _, s := range ud.Spec.Topology.Subsets {
		cond, unschedulable := previous(ud, s.Name, strategy.UnschedulableDuration(), now, &out)
		timedOut := stuck(pods[s.Name].Pending, strategy.RescheduleCriticalDuration(), now, &out)
		if timedOut > 0 {
			unschedulable = true
			cond = schedulable(cond, corev1.ConditionFalse, ReasonReschedule, "timeout pending pods found", now)
			out.recheckIn(strategy.UnschedulableDuration())
		}
		out.Capacity[s.Name] = Capacity{Unschedulable: unschedulable, Running: pods[s.Name].Replicas - timedOut}
		if cond != nil {
			out.Conditions[s.Name] = []kruiseappsv1alpha1.UnitedDeploymentSubsetCondition{*cond}
		}
	}
	return out
}

// previous reads the subset's Schedulable condition: still unschedulable within unschedulableDuration of
// becoming so, recovered after.
func previous(ud *kruiseappsv1alpha1.UnitedDeployment, name string, lasts time.Duration, now time.Time, out *Adaptive) (*kruiseappsv1alpha1.UnitedDeploymentSubsetCondition, bool) {
	st := ud.Status.GetSubsetStatus(name)
	if st == nil {
		return nil, false
	}
	for _, c := range st.Conditions {
		if c.Type != kruiseappsv1alpha1.UnitedDeploymentSubsetSchedulable {
			continue
		}
		if c.Status != corev1.ConditionFalse {
			return c.DeepCopy(), false
		}
		if recover := c.LastTransitionTime.Add(lasts); now.Before(recover) {
			out.recheckIn(recover.Sub(now))
			return c.DeepCopy(), true
		}
		return schedulable(c.DeepCopy(), corev1.ConditionTrue, ReasonRecover, "unschedulable subset recovered", now), false
	}
	return nil, false
}

// stuck counts the pods Unschedulable for longer than critical, and asks to look again when the next
// pending pod reaches it.
func stuck(pending []PendingPod, critical time.Duration, now time.Time, out *Adaptive) int32 {
	var n int32
	for _, p := range pending {
		switch deadline := p.Created.Add(critical); {
		case now.Before(deadline):
			out.recheckIn(deadline.Sub(now))
		case p.Unschedulable:
			n++
		}
	}
	return n
}

func schedulable(c *kruiseappsv1alpha1.UnitedDeploymentSubsetCondition, status corev1.ConditionStatus, reason, message string,
	now time.Time) *kruiseappsv1alpha1.UnitedDeploymentSubsetCondition {
	next := &kruiseappsv1alpha1.UnitedDeploymentSubsetCondition{Type: kruiseappsv1alpha1.UnitedDeploymentSubsetSchedulable,
		Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now)}
	if c != nil && c.Status == status {
		next.LastTransitionTime = c.LastTransitionTime
	}
	return next
}

func (a *Adaptive) recheckIn(d time.Duration) {
	if d > 0 && (a.Recheck == 0 || d < a.Recheck) {
		a.Recheck = d
	}
}
