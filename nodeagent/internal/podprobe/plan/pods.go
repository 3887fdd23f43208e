package plan

import (
	corev1 "k8s.io/api/core/v1"
)

// Active tells a pod that runs or will: not terminal and not being deleted.
func Active(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// Eligible tells a pod whose node agent runs its probes: active, initialized (its init containers ran, so its
// sandbox and IP are there) and on a node.
func Eligible(pod *corev1.Pod) bool {
	return Active(pod) && pod.Spec.NodeName != "" && initialized(pod)
}

func initialized(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodInitialized {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
