package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// RestoreAfter is how long a subset stays Schedulable=False once no pod of it is stuck: then new pods may
// try it again.
const RestoreAfter = 5 * time.Minute

// Condition reasons of the Schedulable subset condition.
const (
	ReasonPodsUnschedulable = "PodsUnschedulable"
	ReasonSchedulable       = "Schedulable"
)

// criticalSeconds is the Adaptive strategy's rescheduleCriticalSeconds; 0 when rescheduling is off.
func criticalSeconds(ws *kruiseappsv1alpha1.WorkloadSpread) time.Duration {
	st := ws.Spec.ScheduleStrategy
	if st.Type != kruiseappsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType || st.Adaptive == nil ||
		st.Adaptive.RescheduleCriticalSeconds == nil || *st.Adaptive.RescheduleCriticalSeconds <= 0 {
		return 0
	}
	return time.Duration(*st.Adaptive.RescheduleCriticalSeconds) * time.Second
}

// adapt sets subset index i's Schedulable condition under the Adaptive strategy: False while some of its
// pods stay unschedulable past rescheduleCriticalSeconds (those pods are to be rescheduled), back to True
// RestoreAfter later. The last subset is the fallback and stays True, as upstream's. Without rescheduling
// the subset has no such condition.
func (o *Outcome) adapt(in Input, i int, s *kruiseappsv1alpha1.WorkloadSpreadSubsetStatus, pods []*corev1.Pod,
	old *kruiseappsv1alpha1.WorkloadSpreadSubsetStatus) {
	critical := criticalSeconds(in.WS)
	if critical == 0 {
		return
	}
	prev := schedulableCondition(old)
	if i == len(in.WS.Spec.Subsets)-1 {
		s.Conditions = []kruiseappsv1alpha1.WorkloadSpreadSubsetCondition{condition(prev, corev1.ConditionTrue, ReasonSchedulable, in.Now)}
		return
	}
	stuck := o.stuck(in, pods, critical)
	switch {
	case len(stuck) > 0:
		o.Reschedule = append(o.Reschedule, stuck...)
		s.Conditions = []kruiseappsv1alpha1.WorkloadSpreadSubsetCondition{condition(prev, corev1.ConditionFalse, ReasonPodsUnschedulable, in.Now)}
	case prev != nil && prev.Status == corev1.ConditionFalse && in.Now.Sub(prev.LastTransitionTime.Time) < RestoreAfter:
		s.Conditions = []kruiseappsv1alpha1.WorkloadSpreadSubsetCondition{*prev}
		o.requeue(RestoreAfter - in.Now.Sub(prev.LastTransitionTime.Time))
	default:
		s.Conditions = []kruiseappsv1alpha1.WorkloadSpreadSubsetCondition{condition(prev, corev1.ConditionTrue, ReasonSchedulable, in.Now)}
	}
}

// stuck are the pods the scheduler has reported unschedulable for critical or longer; the others still
// pending are waited for.
func (o *Outcome) stuck(in Input, pods []*corev1.Pod, critical time.Duration) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range pods {
		since, ok := unschedulableSince(pod)
		if !ok || !Active(pod) {
			continue
		}
		if left := since.Add(critical).Sub(in.Now); left > 0 {
			o.requeue(left)
			continue
		}
		out = append(out, pod)
	}
	return out
}

// unschedulableSince is when the scheduler last found no node for the pod.
func unschedulableSince(pod *corev1.Pod) (time.Time, bool) {
	if pod.Spec.NodeName != "" {
		return time.Time{}, false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

func schedulableCondition(s *kruiseappsv1alpha1.WorkloadSpreadSubsetStatus) *kruiseappsv1alpha1.WorkloadSpreadSubsetCondition {
	if s == nil {
		return nil
	}
	for i := range s.Conditions {
		if s.Conditions[i].Type == kruiseappsv1alpha1.SubsetSchedulable {
			return &s.Conditions[i]
		}
	}
	return nil
}

// condition is the Schedulable condition at status, keeping prev's transition time when status is unchanged.
func condition(prev *kruiseappsv1alpha1.WorkloadSpreadSubsetCondition, status corev1.ConditionStatus, reason string,
	now time.Time) kruiseappsv1alpha1.WorkloadSpreadSubsetCondition {
	c := kruiseappsv1alpha1.WorkloadSpreadSubsetCondition{Type: kruiseappsv1alpha1.SubsetSchedulable, Status: status,
		Reason: reason, LastTransitionTime: metav1.NewTime(now)}
	if prev != nil && prev.Status == status {
		c.LastTransitionTime = prev.LastTransitionTime
	}
	return c
}
