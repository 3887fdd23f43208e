package admission

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

var specPath = field.NewPath("spec")

// Validate checks a set being created (old nil) or updated from old, after defaulting; fields still unset
// are read as their defaults. On update, errors old already had do not block the update, so that a set
// stored before a rule existed can still be scaled and updated; the update rules are always checked.
func Validate(set, old *kruiseappsv1beta1.StatefulSet) field.ErrorList {
	if set == nil {
		return field.ErrorList{field.Required(specPath, "a StatefulSet is required")}
	}
	errs := validateSpec(&set.Spec)
	if old != nil {
		errs = rolloutadmission.Ratchet(errs, validateSpec(&old.Spec))
		errs = append(errs, validateUpdate(&set.Spec, &old.Spec)...)
	}
	return errs
}

func validateSpec(s *kruiseappsv1beta1.StatefulSetSpec) field.ErrorList {
	errs := validatePolicy(s)
	errs = append(errs, validateCounts(s)...)
	errs = append(errs, validateReserveOrdinals(s.ReserveOrdinals, specPath.Child("reserveOrdinals"))...)
	errs = append(errs, validateScaleStrategy(s)...)
	errs = append(errs, validateUpdateStrategy(s)...)
	errs = append(errs, validateClaimStrategies(s)...)
	errs = append(errs, validateSelector(s)...)
	return append(errs, podtemplate.Validate(&s.Template, s.VolumeClaimTemplates, "StatefulSet",
		specPath.Child("template"), specPath.Child("volumeClaimTemplates"))...)
}

func validatePolicy(s *kruiseappsv1beta1.StatefulSetSpec) field.ErrorList {
	switch s.PodManagementPolicy {
	case "", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
		return nil
	}
	return field.ErrorList{field.NotSupported(specPath.Child("podManagementPolicy"), s.PodManagementPolicy,
		[]string{string(appsv1.OrderedReadyPodManagement), string(appsv1.ParallelPodManagement)})}
}

func validateCounts(s *kruiseappsv1beta1.StatefulSetSpec) field.ErrorList {
	var errs field.ErrorList
	if s.Replicas != nil {
		errs = append(errs, nonNegative(int64(*s.Replicas), specPath.Child("replicas"))...)
	}
	if s.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*s.RevisionHistoryLimit), specPath.Child("revisionHistoryLimit"))...)
	}
	if s.Ordinals != nil {
		errs = append(errs, nonNegative(int64(s.Ordinals.Start), specPath.Child("ordinals", "start"))...)
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
func validateSelector(s *kruiseappsv1beta1.StatefulSetSpec) field.ErrorList {
	p := specPath.Child("selector")
	if s.Selector == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	errs := metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, p)
	if len(s.Selector.MatchLabels)+len(s.Selector.MatchExpressions) == 0 {
		return append(errs, field.Invalid(p, s.Selector, "empty selector is invalid for statefulset"))
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
