package admission

import (
	"fmt"
	"strconv"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/intorpercent"
)

var (
	specPath        = field.NewPath("spec")
	annotationsPath = field.NewPath("metadata", "annotations")
)

// Validate checks a PodUnavailableBudget being created (old nil) or updated from old with upstream's rules.
// On update, errors old already had do not block the update (but a changed selector or targetRef does), so
// that a budget stored before a rule existed can still be changed.
func Validate(pub, old *kruisepolicyv1alpha1.PodUnavailableBudget) field.ErrorList {
	if pub == nil {
		return field.ErrorList{field.Required(specPath, "a PodUnavailableBudget is required")}
	}
	errs := validate(pub)
	if old == nil {
		return errs
	}
	errs = rolloutadmission.Ratchet(errs, validate(old))
	return append(errs, validateImmutable(pub, old)...)
}

func validate(pub *kruisepolicyv1alpha1.PodUnavailableBudget) field.ErrorList {
	errs := validateAnnotations(pub.Annotations)
	errs = append(errs, validatePods(&pub.Spec)...)
	return append(errs, validateBudget(&pub.Spec)...)
}

func validateAnnotations(annotations map[string]string) field.ErrorList {
	var errs field.ErrorList
	if value, ok := annotations[kruisepolicyv1alpha1.PubProtectOperationAnnotation]; ok {
		if _, err := kruisepolicyv1alpha1.ParsePubProtectOperations(value); err != nil {
			errs = append(errs, field.Invalid(annotationsPath.Key(kruisepolicyv1alpha1.PubProtectOperationAnnotation), value,
				"must list the operations to protect, comma-separated, of UPDATE, DELETE, EVICT and RESIZE"))
		}
	}
	if value, ok := annotations[kruisepolicyv1alpha1.PubProtectTotalReplicasAnnotation]; ok {
		if n, err := strconv.ParseInt(value, 10, 32); err != nil || n < 0 {
			errs = append(errs, field.Invalid(annotationsPath.Key(kruisepolicyv1alpha1.PubProtectTotalReplicasAnnotation), value,
				"must be a non-negative 32-bit integer"))
		}
	}
	return errs
}

// validatePods: exactly one of a well-formed, non-empty selector and a complete targetRef.
func validatePods(spec *kruisepolicyv1alpha1.PodUnavailableBudgetSpec) field.ErrorList {
	switch {
	case spec.Selector == nil && spec.TargetReference == nil:
		return field.ErrorList{field.Required(specPath.Child("selector"), "one of selector and targetRef is required")}
	case spec.Selector != nil && spec.TargetReference != nil:
		return field.ErrorList{field.Forbidden(specPath.Child("targetRef"), "selector and targetRef are mutually exclusive")}
	case spec.TargetReference != nil:
		return validateTargetRef(spec.TargetReference, specPath.Child("targetRef"))
	}
	return validateSelector(spec.Selector, specPath.Child("selector"))
}

func validateTargetRef(ref *kruisepolicyv1alpha1.TargetReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct{ name, value string }{{"apiVersion", ref.APIVersion}, {"kind", ref.Kind}, {"name", ref.Name}} {
		if f.value == "" {
			errs = append(errs, field.Required(p.Child(f.name), "the workload's "+f.name+" is required"))
		}
	}
	if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
		errs = append(errs, field.Invalid(p.Child("apiVersion"), ref.APIVersion, err.Error()))
	}
	return errs
}

func validateSelector(sel *metav1.LabelSelector, p *field.Path) field.ErrorList {
	errs := metavalidation.ValidateLabelSelector(sel, metavalidation.LabelSelectorValidationOptions{}, p)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(p, sel, "an empty selector would protect every pod of the namespace"))
	}
	return errs
}

// validateBudget: exactly one of maxUnavailable and minAvailable, a non-negative number or a percentage of at
// most 100%.
func validateBudget(spec *kruisepolicyv1alpha1.PodUnavailableBudgetSpec) field.ErrorList {
	switch {
	case spec.MaxUnavailable == nil && spec.MinAvailable == nil:
		return field.ErrorList{field.Required(specPath.Child("maxUnavailable"), "one of maxUnavailable and minAvailable is required")}
	case spec.MaxUnavailable != nil && spec.MinAvailable != nil:
		return field.ErrorList{field.Forbidden(specPath.Child("minAvailable"), "maxUnavailable and minAvailable are mutually exclusive")}
	case spec.MaxUnavailable != nil:
		return intorpercent.Validate(*spec.MaxUnavailable, specPath.Child("maxUnavailable"))
	}
	return intorpercent.Validate(*spec.MinAvailable, specPath.Child("minAvailable"))
}

// validateImmutable: the pods a budget protects are fixed when it is created.
func validateImmutable(pub, old *kruisepolicyv1alpha1.PodUnavailableBudget) field.ErrorList {
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(pub.Spec.Selector, old.Spec.Selector) {
		errs = append(errs, field.Invalid(specPath.Child("selector"), pub.Spec.Selector, "field is immutable"))
	}
	if !apiequality.Semantic.DeepEqual(pub.Spec.TargetReference, old.Spec.TargetReference) {
		errs = append(errs, field.Invalid(specPath.Child("targetRef"), describeRef(pub.Spec.TargetReference), "field is immutable"))
	}
	return errs
}

func describeRef(ref *kruisepolicyv1alpha1.TargetReference) string {
	if ref == nil {
		return "null"
	}
	return fmt.Sprintf("%s %s %s", ref.APIVersion, ref.Kind, ref.Name)
}
