package podtemplate

import corev1 "k8s.io/api/core/v1"

// DefaultClaimTemplate applies what upstream's webhooks apply to a workload's volume claim template: the
// claim's own default (phase Pending; not the claim spec's volumeMode) and rounding of its quantities.
func DefaultClaimTemplate(c *corev1.PersistentVolumeClaim) {
	if c == nil {
		return
	}
	if c.Status.Phase == "" {
		c.Status.Phase = corev1.ClaimPending
	}
	roundUp(c.Spec.Resources.Limits)
	roundUp(c.Spec.Resources.Requests)
	roundUp(c.Status.Capacity)
}
