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

// Validate checks a CloneSet being created (old nil) or updated from old, after defaulting; fields still
// unset are read as their defaults. pods maps pod names in the CloneSet's namespace to the pods: it must
// hold at least those of NewPodsToDelete(cs, old) that exist.
//
// On update, errors old already had do not block the update, so that a CloneSet stored before a rule
// existed can still be scaled, updated and have its finalizers removed; the update rules (immutable
// fields, InPlaceOnly) and the new podsToDelete entries are always checked.
func Validate(cs, old *kruiseappsv1alpha1.CloneSet, pods map[string]*corev1.Pod) field.ErrorList {
	if cs == nil {
		return field.ErrorList{field.Required(specPath, "a CloneSet is required")}
	}
	errs := validateSpec(&cs.Spec)
	if old != nil {
		errs = rolloutadmission.Ratchet(errs, validateSpec(&old.Spec))
		errs = append(errs, validateUpdate(&cs.Spec, &old.Spec)...)
	}
	return append(errs, validatePodsToDelete(cs, old, pods)...)
}

func validateSpec(s *kruiseappsv1alpha1.CloneSetSpec) field.ErrorList {
	errs := validateCounts(s)
	errs = append(errs, validateSelector(s)...)
	errs = append(errs, podtemplate.Validate(&s.Template, s.VolumeClaimTemplates, "cloneset", specPath.Child("template"), specPath.Child("volumeClaimTemplates"))...)
	errs = append(errs, validateScaleStrategy(&s.ScaleStrategy, specPath.Child("scaleStrategy"))...)
	return append(errs, validateUpdateStrategy(&s.UpdateStrategy, replicasOf(s), specPath.Child("updateStrategy"))...)
}

// replicasOf is the desired replica count, unset read as the default.
func replicasOf(s *kruiseappsv1alpha1.CloneSetSpec) int32 {
	if s.Replicas == nil {
		return DefaultReplicas
	}
	return *s.Replicas
}

func validateCounts(s *kruiseappsv1alpha1.CloneSetSpec) field.ErrorList {
	var errs field.ErrorList
	if s.Replicas != nil {
		errs = append(errs, nonNegative(int64(*s.Replicas), specPath.Child("replicas"))...)
	}
	if s.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*s.RevisionHistoryLimit), specPath.Child("revisionHistoryLimit"))...)
	}
	errs = append(errs, nonNegative(int64(s.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	if d := s.ProgressDeadlineSeconds; d != nil && *d <= s.MinReadySeconds {
		errs = append(errs, field.Invalid(specPath.Child("progressDeadlineSeconds"), *d, "must be greater than minReadySeconds"))
	}
	return errs
}

func nonNegative(v int64, p *field.Path) field.ErrorList {
	if v < 0 {
		return field.ErrorList{field.Invalid(p, v, "must be greater than or equal to 0")}
	}
	return nil
}

// validateSelector requires a valid, non-empty selector that selects the template's labels.
func validateSelector(s *kruiseappsv1alpha1.CloneSetSpec) field.ErrorList {
	p := specPath.Child("selector")
	if s.Selector == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	errs := metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, p)
	if len(s.Selector.MatchLabels)+len(s.Selector.MatchExpressions) == 0 {
		return append(errs, field.Invalid(p, s.Selector, "empty selector is invalid for cloneset"))
	}
	selector, err := metav1.LabelSelectorAsSelector(s.Selector)
	if err != nil {
		return errs // ValidateLabelSelector named the fault
	}
	if !selector.Matches(labels.Set(s.Template.Labels)) {
		errs = append(errs, field.Invalid(specPath.Child("template", "metadata", "labels"), s.Template.Labels,
			"`selector` does not match template `labels`"))
	}
	return errs
}
