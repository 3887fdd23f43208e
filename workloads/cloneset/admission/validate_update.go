package admission

import (
	"encoding/json"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
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

// firstSpecDifference finds the first differing field of the two pod specs, container images aside, in
// the specs' JSON (object keys in order); spec.template.spec when none is found.
func firstSpecDifference(s, old *kruiseappsv1alpha1.CloneSetSpec) *field.Path {
	p := specPath.Child("template", "spec")
	o := old.Template.Spec.DeepCopy()
	if len(o.Containers) == len(s.Template.Spec.Containers) {
		for i := range o.Containers {
			o.Containers[i].Image = s.Template.Spec.Containers[i].Image
		}
	}
	before, errBefore := toGeneric(o)
	after, errAfter := toGeneric(&s.Template.Spec)
	if errBefore != nil || errAfter != nil {
		return p
	}
	if d := firstDifference(before, after, p); d != nil {
		return d
	}
	return p
}

func toGeneric(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(raw, &out)
}

// firstDifference walks two decoded JSON values and returns the path of the first difference, nil if
// they are equal. A list of another length differs as a whole.
func firstDifference(a, b any, p *field.Path) *field.Path {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return p
		}
		for _, k := range unionKeys(av, bv) {
			if d := firstDifference(av[k], bv[k], p.Child(k)); d != nil {
				return d
			}
		}
		return nil
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return p
		}
		for i := range av {
			if d := firstDifference(av[i], bv[i], p.Index(i)); d != nil {
				return d
			}
		}
		return nil
	default:
		if reflect.DeepEqual(a, b) {
			return nil
		}
		return p
	}
}

func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
