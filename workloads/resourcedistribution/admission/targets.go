package admission

import (
	"fmt"
	"maps"
	"slices"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// validateTargets: namespace names that can exist, none both included and excluded (upstream calls such
// targets ambiguous), and a valid label selector.
func validateTargets(t *kruiseappsv1alpha1.ResourceDistributionTargets) field.ErrorList {
	errs := validateNames(t.IncludedNamespaces.List, targetsPath.Child("includedNamespaces", "list"))
	errs = append(errs, validateNames(t.ExcludedNamespaces.List, targetsPath.Child("excludedNamespaces", "list"))...)
	if both := ambiguous(t); len(both) > 0 {
		errs = append(errs, field.Invalid(targetsPath, both, fmt.Sprintf(
			"ambiguous targets because namespace %v is in both IncludedNamespaces.List and ExcludedNamespaces.List", both)))
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	return append(errs, metav1validation.ValidateLabelSelector(&t.NamespaceLabelSelector, opts, targetsPath.Child("namespaceLabelSelector"))...)
}

func validateNames(list []kruiseappsv1alpha1.ResourceDistributionNamespace, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ns := range list {
		for _, msg := range apimachineryvalidation.ValidateNamespaceName(ns.Name, false) {
			errs = append(errs, field.Invalid(p.Index(i).Child("name"), ns.Name, msg))
		}
	}
	return errs
}

// ambiguous are the namespaces both included and excluded, sorted.
func ambiguous(t *kruiseappsv1alpha1.ResourceDistributionTargets) []string {
	included := map[string]bool{}
	for _, ns := range t.IncludedNamespaces.List {
		included[ns.Name] = true
	}
	both := map[string]bool{}
	for _, ns := range t.ExcludedNamespaces.List {
		if included[ns.Name] {
			both[ns.Name] = true
		}
	}
	return slices.Sorted(maps.Keys(both))
}

func keysOf[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
