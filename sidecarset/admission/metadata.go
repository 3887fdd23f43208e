package admission

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// The patchPodMetadata whitelist, upstream's: a key of the kruise-configuration ConfigMap holding
// {"rules":[{"selector":<label selector over SidecarSets>,"allowedAnnotationKeyExprs":["<regexp>",...]}]}.
const (
	WhitelistConfigMap = "kruise-configuration"
	WhitelistKey       = "SidecarSet_PatchPodMetadata_WhiteList"
)

// Whitelist lists, per group of SidecarSets, the pod annotations their patchPodMetadata may set.
type Whitelist struct {
	Rules []WhitelistRule `json:"rules"`
}

// WhitelistRule allows the annotation keys matching one of AllowedAnnotationKeyExprs to the SidecarSets
// Selector matches (all when nil).
type WhitelistRule struct {
	Selector                  *metav1.LabelSelector `json:"selector,omitempty"`
	AllowedAnnotationKeyExprs []string              `json:"allowedAnnotationKeyExprs"`
}

var patchPolicies = []string{string(kruiseappsv1alpha1.SidecarSetRetainPatchPolicy), string(kruiseappsv1alpha1.SidecarSetOverwritePatchPolicy),
	string(kruiseappsv1alpha1.SidecarSetMergePatchJsonPatchPolicy)}

// validatePatchPodMetadata: each entry sets valid annotations under a known policy, no key twice, JSON values
// for MergePatchJson, and only keys the whitelist allows the SidecarSet.
func validatePatchPodMetadata(set *kruiseappsv1alpha1.SidecarSet, whitelist string, opts Options) field.ErrorList {
	p := specPath.Child("patchPodMetadata")
	if len(set.Spec.PatchPodMetadata) == 0 {
		return nil
	}
	var errs field.ErrorList
	if err := allowedByWhitelist(set, whitelist, opts); err != nil {
		errs = append(errs, field.Forbidden(p, err.Error()))
	}
	seen := sets.New[string]()
	for i := range set.Spec.PatchPodMetadata {
		errs = append(errs, validatePatch(&set.Spec.PatchPodMetadata[i], seen, p.Index(i))...)
	}
	return errs
}

func validatePatch(m *kruiseappsv1alpha1.SidecarSetPatchPodMetadata, seen sets.Set[string], p *field.Path) field.ErrorList {
	ap := p.Child("annotations")
	var errs field.ErrorList
	if len(m.Annotations) == 0 {
		errs = append(errs, field.Required(ap, "no annotations defined for SidecarSet"))
	}
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(m.Annotations, ap)...)
	errs = append(errs, notSupported(p.Child("patchPolicy"), string(m.PatchPolicy), patchPolicies)...)
	for _, k := range sortedKeys(m.Annotations) {
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(ap.Key(k), fmt.Sprintf("patch annotation[%s] already exist", k)))
		}
		seen.Insert(k)
		if m.PatchPolicy == kruiseappsv1alpha1.SidecarSetMergePatchJsonPatchPolicy && !json.Valid([]byte(m.Annotations[k])) {
			errs = append(errs, field.Invalid(ap.Key(k), m.Annotations[k], "a MergePatchJson value must be JSON"))
		}
	}
	return errs
}

// allowedByWhitelist: without a whitelist rule that applies to the SidecarSet, upstream refuses every
// patchPodMetadata unless its SidecarSetPatchPodMetadataDefaultsAllowed gate is on (off by default): a
// SidecarSet could otherwise set any annotation, such as one that grants privileges, on every pod it selects.
func allowedByWhitelist(set *kruiseappsv1alpha1.SidecarSet, raw string, opts Options) error {
	if raw == "" {
		if opts.PatchPodMetadataDefaultsAllowed {
			return nil
		}
		return fmt.Errorf("SidecarSet patch metadata whitelist not found (ConfigMap %s, key %s)", WhitelistConfigMap, WhitelistKey)
	}
	exprs, err := allowedExprs(set, raw)
	if err != nil {
		return err
	}
	if len(exprs) == 0 {
		if opts.PatchPodMetadataDefaultsAllowed {
			return nil
		}
		return fmt.Errorf("sidecarSet patch metadata annotation is not allowed")
	}
	for _, m := range set.Spec.PatchPodMetadata {
		for _, k := range sortedKeys(m.Annotations) {
			if !slices.ContainsFunc(exprs, func(r *regexp.Regexp) bool { return r.MatchString(k) }) {
				return fmt.Errorf("sidecarSet patch metadata annotation(%s) is not allowed", k)
			}
		}
	}
	return nil
}

// allowedExprs are the key expressions of the whitelist rules that select the SidecarSet.
func allowedExprs(set *kruiseappsv1alpha1.SidecarSet, raw string) ([]*regexp.Regexp, error) {
	w := &Whitelist{}
	if err := json.Unmarshal([]byte(raw), w); err != nil {
		return nil, fmt.Errorf("reading the patch metadata whitelist: %w", err)
	}
	var exprs []*regexp.Regexp
	for _, rule := range w.Rules {
		if rule.Selector != nil {
			sel, err := metav1.LabelSelectorAsSelector(rule.Selector)
			if err != nil {
				return nil, fmt.Errorf("reading the patch metadata whitelist: %w", err)
			}
			if !sel.Matches(labels.Set(set.Labels)) {
				continue
			}
		}
		for _, e := range rule.AllowedAnnotationKeyExprs {
			r, err := regexp.Compile(e)
			if err != nil {
				return nil, fmt.Errorf("reading the patch metadata whitelist: %w", err)
			}
			exprs = append(exprs, r)
		}
	}
	return exprs, nil
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
