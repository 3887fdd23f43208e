package admission

import corev1 "k8s.io/api/core/v1"

// ActivePods counts the pods a Cascading namespace protects: neither finished nor being deleted (kube's
// controller.IsPodActive, as upstream).
func ActivePods(pods []corev1.Pod) int {
	n := 0
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// BoundClaims counts the PersistentVolumeClaims a Cascading namespace protects: Bound and not being deleted.
func BoundClaims(claims []corev1.PersistentVolumeClaim) int {
	n := 0
	for i := range claims {
		c := &claims[i]
		if c.Status.Phase == corev1.ClaimBound && c.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}
