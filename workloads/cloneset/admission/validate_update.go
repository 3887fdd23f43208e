package admission

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

const mutableFieldsMessage = "updates to cloneset spec for fields other than 'replicas', 'template', 'lifecycle', " +
	"'scaleStrategy', 'updateStrategy', 'minReadySeconds', 'progressDeadlineSeconds', 'volumeClaimTemplates' " +
	"and 'revisionHistoryLimit' are forbidden"

const inPlaceOnlyMessage = "only image changes are allowed with updateStrategy.type InPlaceOnly"

func validateUpdate(s, old *kruiseappsv1alpha1.CloneSetSpec) field.ErrorList {
	return append(validateImmutable(s, old), validateInPlaceOnly(s, old)...)
}

// validateImmutable names the selector when it changed, and the spec when any other field outside the
// mutable ones did (none today; fields added later are immutable unless listed).
func validateImmutable(s, old *kruiseappsv1alpha1.CloneSetSpec) field.ErrorList {
	var errs field.ErrorList
	if !equality.Semantic.DeepEqual(s.Selector, old.Selector) {
		errs = append(errs, field.Forbidden(specPath.Child("selector"), "field is immutable"))
	}
	rest := s.DeepCopy()
	rest.Selector = old.Selector
	rest.Replicas = old.Replicas
	rest.Template = old.Template
	rest.Lifecycle = old.Lifecycle
	rest.ScaleStrategy = old.ScaleStrategy
	rest.UpdateStrategy = old.UpdateStrategy
	rest.MinReadySeconds = old.MinReadySeconds
	rest.ProgressDeadlineSeconds = old.ProgressDeadlineSeconds
	rest.VolumeClaimTemplates = old.VolumeClaimTemplates
	rest.RevisionHistoryLimit = old.RevisionHistoryLimit
	if !equality.Semantic.DeepEqual(*rest, *old) {
		errs = append(errs, field.Forbidden(specPath, mutableFieldsMessage))
	}
	return errs
}

// validateInPlaceOnly refuses a template change InPlaceOnly could not apply: anything in the pod spec
// but container images. The error names the first field that differs.
func validateInPlaceOnly(s, old *kruiseappsv1alpha1.CloneSetSpec) field.ErrorList {
	if s.UpdateStrategy.Type != kruiseappsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType {
		return nil
	}
	if _, ok := inplaceupdate.Calculate(&old.Template, &s.Template); ok {
		return nil
	}
	return field.ErrorList{field.Forbidden(firstSpecDifference(s, old), inPlaceOnlyMessage)}
}

// firstSpecDifference names the first field of the pod specs that differs, container images aside;
// spec.template.spec when none is found.
func firstSpecDifference(s, old *kruiseappsv1alpha1.CloneSetSpec) *field.Path {
	p := specPath.Child("template", "spec")
	if d := podtemplate.FirstNonImageDifference(&old.Template.Spec, &s.Template.Spec, p); d != nil {
		return d
	}
	return p
}
