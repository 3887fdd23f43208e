package admission

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

var specPath = field.NewPath("spec")

// Validate checks a DaemonSet being created (old nil) or updated from old, after defaulting, with upstream's
// rules. On update, errors old already had do not block the update, so that a DaemonSet stored before a rule
// existed can still be changed and have its finalizers removed.
func Validate(ds, old *kruiseappsv1alpha1.DaemonSet) field.ErrorList {
	if ds == nil {
		return field.ErrorList{field.Required(specPath, "a DaemonSet is required")}
	}
	errs := validateSpec(&ds.Spec)
	if old != nil {
		errs = rolloutadmission.Ratchet(errs, validateSpec(&old.Spec))
	}
	return errs
}

func validateSpec(s *kruiseappsv1alpha1.DaemonSetSpec) field.ErrorList {
	errs := validateSelector(s)
	errs = append(errs, validateTemplate(&s.Template, specPath.Child("template"))...)
	if s.MinReadySeconds < 0 {
		errs = append(errs, field.Invalid(specPath.Child("minReadySeconds"), s.MinReadySeconds, "must be greater than or equal to 0"))
	}
	if s.RevisionHistoryLimit != nil && *s.RevisionHistoryLimit < 0 {
		errs = append(errs, field.Invalid(specPath.Child("revisionHistoryLimit"), *s.RevisionHistoryLimit, "must be greater than or equal to 0"))
	}
	errs = append(errs, validateUpdateStrategy(&s.UpdateStrategy, specPath.Child("updateStrategy"))...)
	if s.Lifecycle != nil && s.Lifecycle.InPlaceUpdate != nil {
		errs = append(errs, field.Forbidden(specPath.Child("lifecycle", "inPlaceUpdate"), "inPlaceUpdate hook has not supported yet"))
	}
	return errs
}

// validateSelector requires a valid, non-empty selector that matches the template's labels: an empty one
// would claim every pod of the namespace.
func validateSelector(s *kruiseappsv1alpha1.DaemonSetSpec) field.ErrorList {
	p := specPath.Child("selector")
	if s.Selector == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	errs := metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, p)
	if len(s.Selector.MatchLabels)+len(s.Selector.MatchExpressions) == 0 {
		return append(errs, field.Invalid(p, s.Selector, "empty selector is invalid for daemonset"))
	}
	if sel, err := metav1.LabelSelectorAsSelector(s.Selector); err == nil && !sel.Matches(labels.Set(s.Template.Labels)) {
		errs = append(errs, field.Invalid(specPath.Child("template", "metadata", "labels"), s.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

// validateTemplate makes the structural checks of the pod template, and upstream's DaemonSet rules: pods
// restart always, run without a deadline, and mount GCE persistent disks read-only (a daemon runs on many
// nodes at once).
func validateTemplate(t *corev1.PodTemplateSpec, p *field.Path) field.ErrorList {
	errs := podtemplate.Validate(t, nil, "DaemonSet", p, nil)
	sp := p.Child("spec")
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(sp.Child("activeDeadlineSeconds"), "activeDeadlineSeconds in DaemonSet is not Supported"))
	}
	for i, v := range t.Spec.Volumes {
		if v.GCEPersistentDisk != nil && !v.GCEPersistentDisk.ReadOnly {
			errs = append(errs, field.Invalid(sp.Child("volumes").Index(i).Child("gcePersistentDisk", "readOnly"), false,
				"must be true for replicated pods > 1; GCE PD can only be mounted on multiple machines if it is read-only"))
		}
	}
	return errs
}
