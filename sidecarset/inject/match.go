package inject

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// ignoredNamespaces never get sidecars: the cluster's own pods must not depend on a SidecarSet.
var ignoredNamespaces = []string{"kube-system", "kube-public"}

// Matches tells whether set applies to pod: spec.namespace (deprecated; must equal the pod's namespace when
// set), spec.namespaceSelector (against namespaceLabels, the labels of the pod's namespace) and spec.selector.
// An empty or missing selector matches no pod, as upstream (its webhook refuses such SidecarSets). Pods in
// kube-system and kube-public never match. A pod without a namespace is in "default". An error names the
// selector that does not parse.
func Matches(set *kruiseappsv1alpha1.SidecarSet, pod *corev1.Pod, namespaceLabels map[string]string) (bool, error) {
	ns := podNamespace(pod)
	if slices.Contains(ignoredNamespaces, ns) {
		return false, nil
	}
	if set.Spec.Namespace != "" && set.Spec.Namespace != ns {
		return false, nil
	}
	if set.Spec.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(set.Spec.NamespaceSelector)
		if err != nil {
			return false, fmt.Errorf("SidecarSet %s: spec.namespaceSelector: %w", set.Name, err)
		}
		if !sel.Matches(labels.Set(namespaceLabels)) {
			return false, nil
		}
	}
	if set.Spec.Selector == nil {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return false, fmt.Errorf("SidecarSet %s: spec.selector: %w", set.Name, err)
	}
	return !sel.Empty() && sel.Matches(labels.Set(pod.Labels)), nil
}

// Select picks the SidecarSets to inject into pod, sorted by name: the matching ones whose
// injectionStrategy.paused is false, where a matching canary (apps.kruise.io/sidecarset-canary "true" naming
// its base in apps.kruise.io/sidecarset-base) replaces its base.
func Select(sets []*kruiseappsv1alpha1.SidecarSet, pod *corev1.Pod, namespaceLabels map[string]string) ([]*kruiseappsv1alpha1.SidecarSet, error) {
	var matched []*kruiseappsv1alpha1.SidecarSet
	for _, set := range sets {
		if set == nil || set.Spec.InjectionStrategy.Paused {
			continue
		}
		ok, err := Matches(set, pod, namespaceLabels)
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, set)
		}
	}
	replaced := map[string]bool{}
	for _, set := range matched {
		if base := CanaryBase(set); base != "" {
			replaced[base] = true
		}
	}
	out := slices.DeleteFunc(matched, func(s *kruiseappsv1alpha1.SidecarSet) bool { return replaced[s.Name] })
	slices.SortFunc(out, func(a, b *kruiseappsv1alpha1.SidecarSet) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// CanaryBase is the name of the SidecarSet that set is the canary of, or "" when set is no canary (a canary
// naming itself is none either).
func CanaryBase(set *kruiseappsv1alpha1.SidecarSet) string {
	if set.Annotations[kruiseappsv1alpha1.SidecarSetCanaryAnnotation] != "true" {
		return ""
	}
	base := set.Annotations[kruiseappsv1alpha1.SidecarSetBaseAnnotation]
	if base == set.Name {
		return ""
	}
	return base
}

func podNamespace(pod *corev1.Pod) string {
	if pod.Namespace == "" {
		return metav1.NamespaceDefault
	}
	return pod.Namespace
}
