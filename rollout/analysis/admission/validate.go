package admission

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

var specPath = field.NewPath("spec")

// ValidateTemplate checks an AnalysisTemplate being created (old nil) or updated. On update, errors old
// already had do not block the update, so that a template stored before a rule existed can still be fixed.
func ValidateTemplate(t, old *analysisv1alpha1.AnalysisTemplate) field.ErrorList {
	if t == nil {
		return field.ErrorList{field.Required(specPath, "an AnalysisTemplate is required")}
	}
	errs := validateTemplateSpec(&t.Spec)
	if old != nil {
		errs = rolloutadmission.Ratchet(errs, validateTemplateSpec(&old.Spec))
	}
	return errs
}

// ValidateClusterTemplate checks a ClusterAnalysisTemplate as ValidateTemplate does an AnalysisTemplate.
func ValidateClusterTemplate(t, old *analysisv1alpha1.ClusterAnalysisTemplate) field.ErrorList {
	if t == nil {
		return field.ErrorList{field.Required(specPath, "a ClusterAnalysisTemplate is required")}
	}
	errs := validateTemplateSpec(&t.Spec)
	if old != nil {
		errs = rolloutadmission.Ratchet(errs, validateTemplateSpec(&old.Spec))
	}
	return errs
}

func validateTemplateSpec(spec *analysisv1alpha1.AnalysisTemplateSpec) field.ErrorList {
	errs := validateArgs(spec.Args, false, specPath.Child("args"))
	if len(spec.Metrics) == 0 {
		errs = append(errs, field.Required(specPath.Child("metrics"), "a template needs a metric"))
	}
	return append(errs, validateMetrics(spec.Metrics, argNames(spec.Args), specPath.Child("metrics"))...)
}

// ValidateRun checks an AnalysisRun being created (old nil) or updated: on update only that its spec did not
// change but for terminate, which may be set and never cleared.
func ValidateRun(run, old *analysisv1alpha1.AnalysisRun) field.ErrorList {
	if run == nil {
		return field.ErrorList{field.Required(specPath, "an AnalysisRun is required")}
	}
	if old != nil {
		return validateRunUpdate(&run.Spec, &old.Spec)
	}
	spec := &run.Spec
	errs := validateArgs(spec.Args, true, specPath.Child("args"))
	if len(spec.Metrics) == 0 && len(spec.Templates) == 0 {
		errs = append(errs, field.Required(specPath.Child("metrics"), "a run needs metrics or templates"))
	}
	errs = append(errs, validateTemplateRefs(spec.Templates, specPath.Child("templates"))...)
	// The run's own metrics read the run's arguments; the templates' read those the templates declare.
	return append(errs, validateMetrics(spec.Metrics, argNames(spec.Args), specPath.Child("metrics"))...)
}

func validateRunUpdate(spec, old *analysisv1alpha1.AnalysisRunSpec) field.ErrorList {
	if old.Terminate && !spec.Terminate {
		return field.ErrorList{field.Forbidden(specPath.Child("terminate"), "a terminated run stays terminated")}
	}
	was := old.DeepCopy()
	was.Terminate = spec.Terminate
	if !equality.Semantic.DeepEqual(was, spec) {
		return field.ErrorList{field.Forbidden(specPath, "an AnalysisRun's spec may not change but for terminate: create a new run")}
	}
	return nil
}

func validateTemplateRefs(refs []analysisv1alpha1.TemplateRef, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[analysisv1alpha1.TemplateRef]()
	for i, ref := range refs {
		if ref.Name == "" {
			errs = append(errs, field.Required(path.Index(i).Child("name"), "the template's name"))
		}
		if seen.Has(ref) {
			errs = append(errs, field.Duplicate(path.Index(i), ref.Name))
		}
		seen.Insert(ref)
	}
	return errs
}

// validateArgs: unique names, a value or a Secret key but not both; a run's arguments need one of them, a
// template's may leave the value to the run.
func validateArgs(args []analysisv1alpha1.Argument, needValue bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, a := range args {
		p := path.Index(i)
		if names.Has(a.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), a.Name))
		}
		names.Insert(a.Name)
		switch {
		case a.Value != nil && a.ValueFrom != nil:
			errs = append(errs, field.Forbidden(p.Child("valueFrom"), "an argument has a value or a valueFrom, not both"))
		case a.ValueFrom != nil && a.ValueFrom.SecretKeyRef == nil:
			errs = append(errs, field.Required(p.Child("valueFrom", "secretKeyRef"), ""))
		case a.ValueFrom != nil:
			errs = append(errs, validateSecretKey(a.ValueFrom.SecretKeyRef, p.Child("valueFrom", "secretKeyRef"))...)
		case a.Value == nil && needValue:
			errs = append(errs, field.Required(p.Child("value"), "a run's argument needs a value or a valueFrom"))
		}
	}
	return errs
}

func argNames(args []analysisv1alpha1.Argument) sets.Set[string] {
	names := sets.New[string]()
	for _, a := range args {
		names.Insert(a.Name)
	}
	return names
}
