// Package podcondition reads and writes pod conditions and readiness gates, and finds container statuses:
// the few operations the workload mechanisms (in-place update, KruisePodReady, lifecycle hooks), the node
// agent and the planners share.
package podcondition

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Get returns the pod's condition of type t, nil when it has none (or the pod is nil).
func Get(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	if pod == nil {
		return nil
	}
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// Set sets condition t's status and reason, adding the condition when missing; the transition time moves
// only when the status changes. It reports whether anything changed.
func Set(pod *corev1.Pod, t corev1.PodConditionType, status corev1.ConditionStatus, reason string, now metav1.Time) bool {
	c := Get(pod, t)
	if c == nil {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: now})
		return true
	}
	if c.Status == status && c.Reason == reason {
		return false
	}
	if c.Status != status {
		c.LastTransitionTime = now
	}
	c.Status, c.Reason = status, reason
	return true
}

// ContainerStatus returns the status of the pod's container name, nil when the pod reports none (or is nil).
func ContainerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	if pod == nil {
		return nil
	}
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// IsReady reports whether the pod's Ready condition is True.
func IsReady(pod *corev1.Pod) bool {
	c := Get(pod, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// MarkNotReady sets an existing Ready condition False at once, as the kubelet will once it sees a readiness
// gate turn False, so that endpoints drop the pod without waiting for it. A pod the kubelet has not reported
// on yet is left alone. It reports whether anything changed.
func MarkNotReady(pod *corev1.Pod, reason, message string, now metav1.Time) bool {
	c := Get(pod, corev1.PodReady)
	if c == nil || c.Status == corev1.ConditionFalse {
		return false
	}
	c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionFalse, reason, message, now
	return true
}

// HasGate reports whether the pod declares the readiness gate t.
func HasGate(pod *corev1.Pod, t corev1.PodConditionType) bool {
	if pod == nil {
		return false
	}
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == t {
			return true
		}
	}
	return false
}

// AddGate adds the readiness gate t to the pod once; it reports whether it was missing.
func AddGate(pod *corev1.Pod, t corev1.PodConditionType) bool {
	if pod == nil || HasGate(pod, t) {
		return false
	}
	pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: t})
	return true
}
