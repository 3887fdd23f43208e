package admission

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

const nameMaxLen = 63

var (
	specPath   = field.NewPath("spec")
	namePath   = field.NewPath("metadata", "name")
	nameFormat = `^[a-zA-Z0-9\-]+$`
	nameRegexp = regexp.MustCompile(nameFormat)
)

// Validate checks a BroadcastJob being created (old nil) or updated from old, after defaulting, with upstream's
// rules. On update, errors old already had do not block the update, so that a job stored before a rule existed
// can still be changed and deleted.
func Validate(job, old *kruiseappsv1alpha1.BroadcastJob) field.ErrorList {
	if job == nil {
		return field.ErrorList{field.Required(specPath, "a BroadcastJob is required")}
	}
	errs := validate(job)
	if old != nil {
		errs = rolloutadmission.Ratchet(errs, validate(old))
	}
	return errs
}

func validate(job *kruiseappsv1alpha1.BroadcastJob) field.ErrorList {
	errs := validateName(job.Name)
	errs = append(errs, validateCompletionPolicy(&job.Spec.CompletionPolicy, specPath.Child("completionPolicy"))...)
	return append(errs, validateTemplate(&job.Spec.Template, specPath.Child("template"))...)
}

// validateName: upstream allows letters, digits and '-' only, at most 63 of them (the name is a label value
// on every pod).
func validateName(name string) field.ErrorList {
	var errs field.ErrorList
	if name != "" && !nameRegexp.MatchString(name) {
		errs = append(errs, field.Invalid(namePath, name,
			validation.RegexError("BroadcastJob name must consist of alphanumeric characters or '-'", nameFormat, "example-com")))
	}
	if len(name) > nameMaxLen {
		errs = append(errs, field.Invalid(namePath, name, validation.MaxLenError(nameMaxLen)))
	}
	return errs
}

// validateCompletionPolicy: a job of policy Never never finishes, so neither a deadline nor a TTL applies.
func validateCompletionPolicy(cp *kruiseappsv1alpha1.CompletionPolicy, p *field.Path) field.ErrorList {
	if cp.Type != kruiseappsv1alpha1.Never {
		return nil
	}
	var errs field.ErrorList
	if cp.TTLSecondsAfterFinished != nil {
		errs = append(errs, field.Invalid(p.Child("ttlSecondsAfterFinished"), *cp.TTLSecondsAfterFinished,
			"ttlSecondsAfterFinished can just work with Always CompletionPolicyType"))
	}
	if cp.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(p.Child("activeDeadlineSeconds"), *cp.ActiveDeadlineSeconds,
			"activeDeadlineSeconds can just work with Always CompletionPolicyType"))
	}
	return errs
}

// validateTemplate: the template's structure, pods that end (restartPolicy Never or OnFailure), and none of
// the labels the controller sets on its pods.
func validateTemplate(t *corev1.PodTemplateSpec, p *field.Path) field.ErrorList {
	errs := podtemplate.ValidateStructure(t, nil, p, nil)
	if rp := t.Spec.RestartPolicy; rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever {
		errs = append(errs, field.Invalid(p.Child("spec", "restartPolicy"), rp, "pod restartPolicy can only be Never or OnFailure"))
	}
	if t.Labels[kruiseappsv1alpha1.BroadcastJobNameLabelKey] != "" || t.Labels[kruiseappsv1alpha1.BroadcastJobControllerUIDLabelKey] != "" {
		errs = append(errs, field.Invalid(p.Child("metadata", "labels"), t.Labels, fmt.Sprintf("%q and %q are not allowed to preset in pod labels",
			kruiseappsv1alpha1.BroadcastJobNameLabelKey, kruiseappsv1alpha1.BroadcastJobControllerUIDLabelKey)))
	}
	return errs
}
