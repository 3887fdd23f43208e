package trafficrouting

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplaceMapPatch is the JSON merge patch value that turns the string map current into want: a merge patch
// merges maps, so every key want lacks is set to null to remove it.
func ReplaceMapPatch(current, want map[string]string) map[string]any {
	patch := make(map[string]any, len(current)+len(want))
	for k := range current {
		patch[k] = nil
	}
	for k, v := range want {
		patch[k] = v
	}
	return patch
}

// OwnedBy reports whether owner (by UID) is among obj's owners: only objects a release created are deleted.
func OwnedBy(obj metav1.Object, owner metav1.OwnerReference) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.UID {
			return true
		}
	}
	return false
}
