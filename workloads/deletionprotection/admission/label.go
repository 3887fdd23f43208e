package admission

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

var labelPath = field.NewPath("metadata", "labels").Key(kruisepolicyv1alpha1.DeletionProtectionKey)

// Supported are the label values that protect objects of a group and kind: Always, and Cascading where a
// Cascading rule means something (not for Services and Ingresses).
func Supported(group, kind string) []string {
	switch classOf(group, kind) {
	case unprotected:
		return nil
	case alwaysOnly:
		return []string{kruisepolicyv1alpha1.DeletionProtectionTypeAlways}
	}
	return []string{kruisepolicyv1alpha1.DeletionProtectionTypeAlways, kruisepolicyv1alpha1.DeletionProtectionTypeCascading}
}

// ValidateLabel refuses setting the label to a value that would protect nothing: upstream accepts any value and
// then ignores an unknown one, so a typo ("always") or Cascading on a Service leaves the object unprotected
// without a word. Only a value set or changed by this write is judged (old is nil on create), so an object
// labelled before the rule, or before the gate was on, can still be updated without fixing its label.
func ValidateLabel(group, kind string, cur, old map[string]string) field.ErrorList {
	value, set := cur[kruisepolicyv1alpha1.DeletionProtectionKey]
	if !set || !Protects(group, kind) {
		return nil
	}
	if before, had := old[kruisepolicyv1alpha1.DeletionProtectionKey]; had && before == value {
		return nil
	}
	supported := Supported(group, kind)
	for _, s := range supported {
		if value == s {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(labelPath, value, supported)}
}
