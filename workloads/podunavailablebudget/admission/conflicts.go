package admission

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

// Conflicts refuses pub when another budget of its namespace (others may include pub itself) protects the
// same pods, as upstream: the same workload (API group, kind and name), or a selector upstream calls
// overlapping. Only the first conflict is reported.
func Conflicts(pub *kruisepolicyv1alpha1.PodUnavailableBudget, others []kruisepolicyv1alpha1.PodUnavailableBudget) field.ErrorList {
	for i := range others {
		other := &others[i]
		if other.Name == pub.Name {
			continue
		}
		if sameWorkload(pub.Spec.TargetReference, other.Spec.TargetReference) {
			return field.ErrorList{field.Invalid(specPath.Child("targetRef"), describeRef(pub.Spec.TargetReference),
				fmt.Sprintf("in conflict with PodUnavailableBudget %s, which protects the same workload", other.Name))}
		}
		if pub.Spec.Selector != nil && other.Spec.Selector != nil && looselyOverlap(pub.Spec.Selector, other.Spec.Selector) {
			return field.ErrorList{field.Invalid(specPath.Child("selector"), pub.Spec.Selector,
				fmt.Sprintf("in conflict with PodUnavailableBudget %s, whose selector overlaps", other.Name))}
		}
	}
	return nil
}

func sameWorkload(a, b *kruisepolicyv1alpha1.TargetReference) bool {
	if a == nil || b == nil {
		return false
	}
	ga, errA := schema.ParseGroupVersion(a.APIVersion)
	gb, errB := schema.ParseGroupVersion(b.APIVersion)
	return errA == nil && errB == nil && ga.Group == gb.Group && a.Kind == b.Kind && a.Name == b.Name
}

// looselyOverlap is upstream's overlap of two budgets' selectors: they constrain the same label keys, and for
// each key some value, or its absence, satisfies both. Selectors on different keys never conflict, though a
// pod may carry both labels.
func looselyOverlap(a, b *metav1.LabelSelector) bool {
	ra, rb := requirementsByKey(a), requirementsByKey(b)
	if len(ra) != len(rb) {
		return false
	}
	for key, reqs := range ra {
		other, ok := rb[key]
		if !ok || !satisfiableTogether(append(slices.Clone(reqs), other...)) {
			return false
		}
	}
	return true
}

func requirementsByKey(sel *metav1.LabelSelector) map[string][]metav1.LabelSelectorRequirement {
	out := map[string][]metav1.LabelSelectorRequirement{}
	for _, r := range sel.MatchExpressions {
		out[r.Key] = append(out[r.Key], r)
	}
	for k, v := range sel.MatchLabels {
		out[k] = append(out[k], metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}})
	}
	return out
}

// satisfiableTogether reports whether one state of a label (absent, or one value) meets every requirement. The
// candidates are absence, each value the requirements name, and one value none names.
func satisfiableTogether(reqs []metav1.LabelSelectorRequirement) bool {
	if meetsAll(reqs, "", false) {
		return true
	}
	unnamed := "\x00"
	for _, r := range reqs {
		for _, v := range r.Values {
			if meetsAll(reqs, v, true) {
				return true
			}
			unnamed += v
		}
	}
	return meetsAll(reqs, unnamed, true)
}

func meetsAll(reqs []metav1.LabelSelectorRequirement, value string, present bool) bool {
	for _, r := range reqs {
		if !meets(r, value, present) {
			return false
		}
	}
	return true
}

func meets(r metav1.LabelSelectorRequirement, value string, present bool) bool {
	switch r.Operator {
	case metav1.LabelSelectorOpIn:
		return present && slices.Contains(r.Values, value)
	case metav1.LabelSelectorOpNotIn:
		return !present || !slices.Contains(r.Values, value)
	case metav1.LabelSelectorOpExists:
		return present
	case metav1.LabelSelectorOpDoesNotExist:
		return !present
	}
	return false
}
