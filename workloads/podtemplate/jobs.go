package podtemplate

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateJob makes ValidateStructure's checks of the pod template of a run-to-completion job (a Job's, a
// BroadcastJob's) at p, and requires its pods to restart OnFailure or Never, as the Job API and upstream's
// BroadcastJob webhook do.
func ValidateJob(t *corev1.PodTemplateSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if rp := t.Spec.RestartPolicy; rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever {
		errs = append(errs, field.NotSupported(p.Child("spec", "restartPolicy"), rp,
			[]string{string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}))
	}
	return append(errs, ValidateStructure(t, nil, p, nil)...)
}
