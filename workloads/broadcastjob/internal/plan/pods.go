package plan

import (
	corev1 "k8s.io/api/core/v1"
)

// Counts sorts a job's pods as upstream does: Succeeded and Failed by phase; of the others, those not being
// deleted are active, unless their restartPolicy is OnFailure and their containers restarted more than
// restartLimit times in all, which makes them failed too. Pods being deleted that have not ended count in
// none.
type Counts struct {
	Active, Succeeded, Failed []*corev1.Pod
}

// Classify sorts pods into Counts.
func Classify(pods []*corev1.Pod, restartLimit int32) Counts {
	var c Counts
	for _, p := range pods {
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			c.Succeeded = append(c.Succeeded, p)
		case p.Status.Phase == corev1.PodFailed:
			c.Failed = append(c.Failed, p)
		case p.DeletionTimestamp != nil:
		case RestartsExceeded(p, restartLimit):
			c.Failed = append(c.Failed, p)
		default:
			c.Active = append(c.Active, p)
		}
	}
	return c
}

// RestartsExceeded reports whether a pod with restartPolicy OnFailure restarted its containers (init
// containers included) more than limit times in all. Pods of other policies never count as failed by
// restarts: with Never a failure ends the pod.
func RestartsExceeded(p *corev1.Pod, limit int32) bool {
	if p.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, s := range p.Status.InitContainerStatuses {
		restarts += s.RestartCount
	}
	for _, s := range p.Status.ContainerStatuses {
		restarts += s.RestartCount
	}
	return restarts > limit
}

// running reports whether a pod still runs or waits to: not ended, not being deleted.
func running(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}
