package admission

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
)

// v1alpha1RollingStyles are the values of the rolling-style annotation a v1alpha1 Rollout accepts, in any
// case; empty means canary.
var v1alpha1RollingStyles = []string{"", "canary", "partition"}

// validateRollingStyleAnnotation checks the annotation that carries a v1alpha1 Rollout's rolling style.
func validateRollingStyleAnnotation(annotations map[string]string) field.ErrorList {
	style := annotations[rolloutsv1alpha1.RolloutStyleAnnotation]
	for _, allowed := range v1alpha1RollingStyles {
		if strings.EqualFold(style, allowed) {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(annotationsPath.Key(rolloutsv1alpha1.RolloutStyleAnnotation),
		style, []string{"canary", "partition"})}
}
