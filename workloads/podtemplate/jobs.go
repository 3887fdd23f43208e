package podtemplate

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateJob makes Validate's structural checks of the pod template of a run-to-completion job (a Job's, a
// BroadcastJob's) at p: its pods restart OnFailure or Never, as the Job API and upstream's BroadcastJob webhook
// require, and may have a deadline.
func ValidateJob(t *corev1.PodTemplateSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	sp := p.Child("spec")
	if rp := t.Spec.RestartPolicy; rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever {
		errs = append(errs, field.NotSupported(sp.Child("restartPolicy"), rp,
			[]string{string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}))
	}
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(sp.Child("ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return append(errs, validateStructure(t, nil, p, nil)...)
}
