package plan

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Never are the namespaces nothing is distributed to, whatever the targets say (upstream's documented rule):
// the cluster's own.
var Never = []string{"kube-system", "kube-public"}

// Namespace is what the planner knows of a namespace.
type Namespace struct {
	Name   string
	Labels map[string]string
	// Terminating namespaces take no copy: creating one there fails.
	Terminating bool
}

// Targets are the namespaces a ResourceDistribution distributes to, sorted: every existing namespace with
// allNamespaces, else the listed ones (whether they exist or not: a missing one is reported) and those its
// label selector matches; then minus the excluded ones and Never. An empty selector matches nothing, and
// with allNamespaces a listed namespace that does not exist is not a target, as upstream computes them.
func Targets(t *kruiseappsv1alpha1.ResourceDistributionTargets, namespaces []Namespace) ([]string, error) {
	set := map[string]bool{}
	if t.AllNamespaces {
		for _, ns := range namespaces {
			set[ns.Name] = true
		}
	} else {
		if err := addSelected(set, &t.NamespaceLabelSelector, namespaces); err != nil {
			return nil, err
		}
		for _, ns := range t.IncludedNamespaces.List {
			set[ns.Name] = true
		}
	}
	for _, ns := range t.ExcludedNamespaces.List {
		delete(set, ns.Name)
	}
	for _, ns := range Never {
		delete(set, ns)
	}
	return sortedKeys(set), nil
}

func addSelected(set map[string]bool, ls *metav1.LabelSelector, namespaces []Namespace) error {
	sel, err := Selector(ls)
	if err != nil || sel.Empty() {
		return err
	}
	for _, ns := range namespaces {
		if sel.Matches(labels.Set(ns.Labels)) {
			set[ns.Name] = true
		}
	}
	return nil
}

// Selector is the namespace label selector; an empty one selects nothing.
func Selector(ls *metav1.LabelSelector) (labels.Selector, error) {
	if len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0 {
		return labels.Nothing(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("spec.targets.namespaceLabelSelector: %w", err)
	}
	return sel, nil
}

// Targeted tells whether the targets take namespace ns as it is: the rules of Targets for one namespace
// that exists. The namespace watch asks it of a namespace before and after a change.
func Targeted(t *kruiseappsv1alpha1.ResourceDistributionTargets, ns Namespace) bool {
	if listed(ns.Name, t.ExcludedNamespaces.List) || slices.Contains(Never, ns.Name) {
		return false
	}
	if t.AllNamespaces || listed(ns.Name, t.IncludedNamespaces.List) {
		return true
	}
	sel, err := Selector(&t.NamespaceLabelSelector)
	return err == nil && sel.Matches(labels.Set(ns.Labels))
}

func listed(name string, list []kruiseappsv1alpha1.ResourceDistributionNamespace) bool {
	return slices.ContainsFunc(list, func(ns kruiseappsv1alpha1.ResourceDistributionNamespace) bool { return ns.Name == name })
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
