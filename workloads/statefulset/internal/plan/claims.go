package plan

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// ClaimName is the claim of volumeClaimTemplate template for the set's pod of ordinal n, as the native
// StatefulSet names it: <template>-<set>-<n>.
func ClaimName(template, set string, n int32) string {
	return template + "-" + PodName(set, n)
}

// ClaimOwners says which owner references the claims of a pod carry under the retention policy (nil:
// Retain both): the set's, so that deleting the set deletes them (whenDeleted Delete), and the pod's, so
// that they go with a pod the set scaled away (whenScaled Delete, for condemned pods only).
func ClaimOwners(policy *kruiseappsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy, condemned bool) (set, pod bool) {
	if policy == nil {
		return false, false
	}
	deletedWithSet := policy.WhenDeleted == kruiseappsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType
	deletedWhenScaled := policy.WhenScaled == kruiseappsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType
	if condemned && deletedWhenScaled {
		return false, true
	}
	return deletedWithSet, false
}

// ClaimState is how far a pod's claims follow their templates.
type ClaimState struct {
	// Compatible: every claim requests at least its template's storage (and matches it otherwise).
	Compatible bool
	// Ready: compatible, and every claim's capacity reached its request.
	Ready bool
	// Completed: compatible, and every claim is either ready or waits only for the file system resize,
	// which happens when a pod mounts it.
	Completed bool
}

// ClaimsOf sums the states of a pod's claims (missing or terminating claims are left out, as upstream).
func ClaimsOf(claims []*corev1.PersistentVolumeClaim, templates []*corev1.PersistentVolumeClaim) ClaimState {
	s := ClaimState{Compatible: true, Ready: true, Completed: true}
	for i, c := range claims {
		if c == nil || c.DeletionTimestamp != nil {
			continue
		}
		compatible, ready := CompatibleAndReady(c, templates[i])
		s.Compatible = s.Compatible && compatible
		s.Ready = s.Ready && compatible && ready
		s.Completed = s.Completed && compatible && (ready || resizePending(c))
	}
	return s
}

// SameButSize reports whether a claim matches its template apart from the storage size: the storage class
// (when both name one) and the access modes.
func SameButSize(claim, template *corev1.PersistentVolumeClaim) bool {
	tc, cc := template.Spec.StorageClassName, claim.Spec.StorageClassName
	if tc != nil && cc != nil && *tc != *cc {
		return false
	}
	if len(claim.Spec.AccessModes) != len(template.Spec.AccessModes) {
		return false
	}
	for i, m := range claim.Spec.AccessModes {
		if template.Spec.AccessModes[i] != m {
			return false
		}
	}
	return true
}

// CompatibleAndReady reports whether a claim requests at least its template's storage and matches it
// otherwise (compatible), and whether its capacity reached its request (ready).
func CompatibleAndReady(claim, template *corev1.PersistentVolumeClaim) (compatible, ready bool) {
	if !SameButSize(claim, template) {
		return false, false
	}
	want, have := requested(template), requested(claim)
	compatible = want != nil && have != nil && have.Cmp(*want) >= 0
	capacity, ok := claim.Status.Capacity[corev1.ResourceStorage]
	ready = ok && have != nil && capacity.Cmp(*have) >= 0
	return compatible, ready
}

// NeedsExpand reports whether a claim requests less storage than its template.
func NeedsExpand(claim, template *corev1.PersistentVolumeClaim) bool {
	want, have := requested(template), requested(claim)
	return want != nil && have != nil && have.Cmp(*want) < 0
}

func requested(c *corev1.PersistentVolumeClaim) *resource.Quantity {
	q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil
	}
	return &q
}

func resizePending(c *corev1.PersistentVolumeClaim) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
