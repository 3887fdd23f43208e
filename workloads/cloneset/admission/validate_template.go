package admission

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

// validateTemplate makes the cheap structural checks of the pod template (podtemplate.Validate, with the
// claim templates the controller adds to every pod), and the pod fields a CloneSet cannot run with.
func validateTemplate(s *kruiseappsv1alpha1.CloneSetSpec, p *field.Path) field.ErrorList {
	errs := podtemplate.Validate(&s.Template, p, s.VolumeClaimTemplates, specPath.Child("volumeClaimTemplates"))
	return append(errs, validatePodFields(&s.Template.Spec, p.Child("spec"))...)
}

// validatePodFields checks the pod-level fields a CloneSet constrains.
func validatePodFields(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.RestartPolicy != "" && s.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(p.Child("restartPolicy"), s.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if s.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(p.Child("activeDeadlineSeconds"), "activeDeadlineSeconds in cloneset is not Supported"))
	}
	if len(s.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(p.Child("ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}
