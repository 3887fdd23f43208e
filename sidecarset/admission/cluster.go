package admission

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var annotationsPath = field.NewPath("metadata", "annotations")

// isCanary tells whether a SidecarSet is the canary of another (apps.kruise.io/sidecarset-canary "true").
func isCanary(set *kruiseappsv1alpha1.SidecarSet) bool {
	return set.Annotations[kruiseappsv1alpha1.SidecarSetCanaryAnnotation] == "true"
}

// validateCanary: a canary names an existing SidecarSet other than itself, which is no canary, and does not
// roll pods itself (its pods are updated by being injected).
func validateCanary(set *kruiseappsv1alpha1.SidecarSet, others []kruiseappsv1alpha1.SidecarSet) field.ErrorList {
	if !isCanary(set) {
		return nil
	}
	bp := annotationsPath.Key(kruiseappsv1alpha1.SidecarSetBaseAnnotation)
	var errs field.ErrorList
	if set.Spec.UpdateStrategy.Type == kruiseappsv1alpha1.RollingUpdateSidecarSetStrategyType {
		errs = append(errs, field.Forbidden(specPath.Child("updateStrategy", "type"), "RollingUpdate is not supported for canary sidecarSet"))
	}
	base := set.Annotations[kruiseappsv1alpha1.SidecarSetBaseAnnotation]
	switch i := slices.IndexFunc(others, func(o kruiseappsv1alpha1.SidecarSet) bool { return o.Name == base }); {
	case base == "":
		errs = append(errs, field.Required(bp, "a canary sidecarSet names its base sidecarSet"))
	case base == set.Name:
		errs = append(errs, field.Invalid(bp, base, "base sidecarSet cannot be itself"))
	case i < 0:
		errs = append(errs, field.NotFound(bp, base))
	case isCanary(&others[i]):
		errs = append(errs, field.Invalid(bp, base, "base sidecarSet cannot be canary"))
	}
	return errs
}

// canaryPair tells whether one of a and b is the canary of the other: a canary repeats its base's
// containers for the same pods on purpose, and replaces it there.
func canaryPair(a, b *kruiseappsv1alpha1.SidecarSet) bool {
	baseOf := func(s *kruiseappsv1alpha1.SidecarSet) string {
		if !isCanary(s) {
			return ""
		}
		return s.Annotations[kruiseappsv1alpha1.SidecarSetBaseAnnotation]
	}
	return baseOf(a) == b.Name || baseOf(b) == a.Name
}

// validateConflicts: two SidecarSets that can select the same pod must not inject containers (or init
// containers) of the same name, different volumes of the same name, or the same annotation when either
// overwrites it. Each conflict names the other SidecarSet.
func validateConflicts(set *kruiseappsv1alpha1.SidecarSet, c Cluster) field.ErrorList {
	var errs field.ErrorList
	for i := range c.SidecarSets {
		other := &c.SidecarSets[i]
		if other.Name == set.Name || canaryPair(set, other) || !overlapping(set, other, c.NamespaceLabels) {
			continue
		}
		errs = append(errs, containerConflicts(set.Spec.InitContainers, other.Spec.InitContainers, other.Name, specPath.Child("initContainers"))...)
		errs = append(errs, containerConflicts(set.Spec.Containers, other.Spec.Containers, other.Name, specPath.Child("containers"))...)
		errs = append(errs, volumeConflicts(set, other)...)
		errs = append(errs, annotationConflicts(set, other)...)
	}
	return errs
}

func containerConflicts(cs, others []kruiseappsv1alpha1.SidecarContainer, other string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range cs {
		if slices.ContainsFunc(others, func(o kruiseappsv1alpha1.SidecarContainer) bool { return o.Name == cs[i].Name }) {
			errs = append(errs, field.Invalid(p.Index(i).Child("name"), cs[i].Name, fmt.Sprintf("container %s already exist in %s", cs[i].Name, other)))
		}
	}
	return errs
}

func volumeConflicts(set, other *kruiseappsv1alpha1.SidecarSet) field.ErrorList {
	var errs field.ErrorList
	for i, v := range set.Spec.Volumes {
		for _, o := range other.Spec.Volumes {
			if o.Name == v.Name && !equality.Semantic.DeepEqual(o, v) {
				errs = append(errs, field.Invalid(specPath.Child("volumes").Index(i).Child("name"), v.Name,
					fmt.Sprintf("volume %s is in conflict with sidecarset %s", v.Name, other.Name)))
			}
		}
	}
	return errs
}

// annotationConflicts: Retain patches never fight (the first value stays); MergePatchJson patches merge;
// an Overwrite against any non-Retain patch of the same key would flip the annotation back and forth.
func annotationConflicts(set, other *kruiseappsv1alpha1.SidecarSet) field.ErrorList {
	policies := map[string]kruiseappsv1alpha1.SidecarSetPatchPolicyType{}
	for _, m := range other.Spec.PatchPodMetadata {
		for k := range m.Annotations {
			if m.PatchPolicy != kruiseappsv1alpha1.SidecarSetRetainPatchPolicy {
				policies[k] = m.PatchPolicy
			}
		}
	}
	var errs field.ErrorList
	for i, m := range set.Spec.PatchPodMetadata {
		if m.PatchPolicy == kruiseappsv1alpha1.SidecarSetRetainPatchPolicy {
			continue
		}
		for _, k := range sortedKeys(m.Annotations) {
			theirs, ok := policies[k]
			if ok && (m.PatchPolicy == kruiseappsv1alpha1.SidecarSetOverwritePatchPolicy || theirs == kruiseappsv1alpha1.SidecarSetOverwritePatchPolicy) {
				errs = append(errs, field.Invalid(specPath.Child("patchPodMetadata").Index(i).Child("annotations").Key(k), m.Annotations[k],
					fmt.Sprintf("annotation %s is in conflict with sidecarset %s", k, other.Name)))
			}
		}
	}
	return errs
}

// overlapping tells whether two SidecarSets can select the same pod: their namespaces and their pod
// selectors overlap.
func overlapping(a, b *kruiseappsv1alpha1.SidecarSet, nsLabels map[string]map[string]string) bool {
	return namespacesOverlap(&a.Spec, &b.Spec, nsLabels) && selectorsOverlap(a.Spec.Selector, b.Spec.Selector)
}

// namespacesOverlap compares the namespaces two SidecarSets inject into: two different namespaces never
// meet, two namespace selectors meet unless disjoint, and a namespace meets a selector that selects it.
// (Upstream means the same; its last comparison reads the wrong selector, which Flotilla does not copy.)
func namespacesOverlap(a, b *kruiseappsv1alpha1.SidecarSetSpec, nsLabels map[string]map[string]string) bool {
	switch {
	case a.Namespace != "" && b.Namespace != "":
		return a.Namespace == b.Namespace
	case a.NamespaceSelector != nil && b.NamespaceSelector != nil:
		return selectorsOverlap(a.NamespaceSelector, b.NamespaceSelector)
	case a.Namespace != "" && b.NamespaceSelector != nil:
		return selects(b.NamespaceSelector, a.Namespace, nsLabels)
	case b.Namespace != "" && a.NamespaceSelector != nil:
		return selects(a.NamespaceSelector, b.Namespace, nsLabels)
	}
	return true
}

// selects tells whether sel selects the namespace ns; a namespace that does not exist is selected by none.
func selects(sel *metav1.LabelSelector, ns string, nsLabels map[string]map[string]string) bool {
	l, ok := nsLabels[ns]
	if !ok {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(l))
}

// keyRule is what a selector requires of one label key.
type keyRule struct {
	present, absent bool
	in              []string // nil: any value
	notIn           []string
}

// selectorsOverlap tells whether some label set satisfies both selectors: no key may be required both
// present and absent, or restricted to values the other excludes. A missing selector selects nothing.
func selectorsOverlap(a, b *metav1.LabelSelector) bool {
	if a == nil || b == nil {
		return false
	}
	rules := map[string]*keyRule{}
	addRules(rules, a)
	addRules(rules, b)
	for _, r := range rules {
		if r.present && r.absent {
			return false
		}
		if r.in != nil && !slices.ContainsFunc(r.in, func(v string) bool { return !slices.Contains(r.notIn, v) }) {
			return false
		}
	}
	return true
}

func addRules(rules map[string]*keyRule, sel *metav1.LabelSelector) {
	rule := func(k string) *keyRule {
		if rules[k] == nil {
			rules[k] = &keyRule{}
		}
		return rules[k]
	}
	for k, v := range sel.MatchLabels {
		rule(k).restrict([]string{v})
	}
	for _, e := range sel.MatchExpressions {
		r := rule(e.Key)
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			r.restrict(e.Values)
		case metav1.LabelSelectorOpNotIn:
			r.notIn = append(r.notIn, e.Values...)
		case metav1.LabelSelectorOpExists:
			r.present = true
		case metav1.LabelSelectorOpDoesNotExist:
			r.absent = true
		}
	}
}

// restrict requires the key present with one of values, on top of what is already required.
func (r *keyRule) restrict(values []string) {
	r.present = true
	if r.in == nil {
		r.in = slices.Clone(values)
		return
	}
	r.in = slices.DeleteFunc(r.in, func(v string) bool { return !slices.Contains(values, v) })
}

// validateUpdate: upstream's rules of updates. A sidecar container keeps its name (pods are matched to the
// SidecarSet's containers by name, so one cannot be added or renamed) and its upgradeType (a hot-upgrade
// sidecar is injected as two containers); a canary keeps its base.
func validateUpdate(set, old *kruiseappsv1alpha1.SidecarSet) field.ErrorList {
	var errs field.ErrorList
	p := specPath.Child("containers")
	for i, c := range set.Spec.Containers {
		j := slices.IndexFunc(old.Spec.Containers, func(o kruiseappsv1alpha1.SidecarContainer) bool { return o.Name == c.Name })
		if j < 0 {
			errs = append(errs, field.Forbidden(p.Index(i).Child("name"),
				fmt.Sprintf("container %s is not found in the stored SidecarSet: sidecar containers cannot be added or renamed", c.Name)))
			continue
		}
		was := old.Spec.Containers[j].UpgradeStrategy.UpgradeType
		if was != "" && c.UpgradeStrategy.UpgradeType != was {
			errs = append(errs, field.Invalid(p.Index(i).Child("upgradeStrategy", "upgradeType"), c.UpgradeStrategy.UpgradeType,
				fmt.Sprintf("container %s upgradeType is immutable", c.Name)))
		}
	}
	return append(errs, validateBaseUnchanged(set, old)...)
}

// validateBaseUnchanged: a base, once named, stays (adding one to a SidecarSet without is allowed).
func validateBaseUnchanged(set, old *kruiseappsv1alpha1.SidecarSet) field.ErrorList {
	key := kruiseappsv1alpha1.SidecarSetBaseAnnotation
	was, ok := old.Annotations[key]
	if !ok || was == "" || set.Annotations[key] == was {
		return nil
	}
	return field.ErrorList{field.Invalid(annotationsPath.Key(key), set.Annotations[key], fmt.Sprintf("annotations[%s] is immutable", key))}
}
