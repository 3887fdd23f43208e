package control

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// ControlInfo is the value of the control-info annotation for a BatchRelease owner reference.
func ControlInfo(owner metav1.OwnerReference) string {
	b, _ := json.Marshal(owner) //nolint:errchkjson // an OwnerReference always marshals
	return string(b)
}

// ControlledBy reports whether annotations carry control-info naming owner (by UID, or by name when the
// annotation was written without one).
func ControlledBy(annotations map[string]string, owner metav1.OwnerReference) bool {
	got, ok := ControlOwner(annotations)
	if !ok {
		return false
	}
	if got.UID != "" && owner.UID != "" {
		return got.UID == owner.UID
	}
	return got.Name == owner.Name && got.Kind == owner.Kind
}

// ControlOwner parses the control-info annotation.
func ControlOwner(annotations map[string]string) (metav1.OwnerReference, bool) {
	raw := annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]
	if raw == "" {
		return metav1.OwnerReference{}, false
	}
	var owner metav1.OwnerReference
	if err := json.Unmarshal([]byte(raw), &owner); err != nil {
		return metav1.OwnerReference{}, false
	}
	return owner, true
}
