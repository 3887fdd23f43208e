package admission

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
	"github.com/flotilla-dev/flotilla/workloads/uniteddeployment/internal/plan"
)

var (
	specPath     = field.NewPath("spec")
	selectorPath = specPath.Child("selector")
	templatePath = specPath.Child("template")
	subsetsPath  = specPath.Child("topology", "subsets")
)

// Validate checks a UnitedDeployment being created (old nil) or updated from old, after defaulting, with
// upstream's rules. On update the selector and each kept subset's nodeSelectorTerm and tolerations cannot
// change, and errors old already had do not block the update, so that an object stored before a rule existed
// can still be changed.
func Validate(ud, old *kruiseappsv1alpha1.UnitedDeployment) field.ErrorList {
	if ud == nil {
		return field.ErrorList{field.Required(specPath, "a UnitedDeployment is required")}
	}
	errs := validate(ud)
	if old == nil {
		return errs
	}
	errs = rolloutadmission.Ratchet(errs, validate(old))
	return append(errs, validateUpdate(&ud.Spec, &old.Spec)...)
}

func validate(ud *kruiseappsv1alpha1.UnitedDeployment) field.ErrorList {
	s := &ud.Spec
	var errs field.ErrorList
	if s.Replicas != nil && *s.Replicas < 0 {
		errs = append(errs, field.Invalid(specPath.Child("replicas"), *s.Replicas, "must be greater than or equal to 0"))
	}
	selector, selErrs := validateSelector(s.Selector)
	errs = append(errs, selErrs...)
	errs = append(errs, validateTemplate(&s.Template, selector)...)
	errs = append(errs, validateSubsets(s.Topology.Subsets)...)
	errs = append(errs, validateReplicas(s.Replicas, s.Topology.Subsets)...)
	return append(errs, validatePartitions(s)...)
}

// validateSelector requires a valid, non-empty selector; it returns it parsed (nil when invalid).
func validateSelector(sel *metav1.LabelSelector) (labels.Selector, field.ErrorList) {
	if sel == nil {
		return nil, field.ErrorList{field.Required(selectorPath, "a selector is required")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, selectorPath)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(selectorPath, sel, "empty selector is invalid for a UnitedDeployment"))
	}
	parsed, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || len(errs) > 0 {
		return nil, errs
	}
	return parsed, nil
}

// templateNames are the template fields, in the order upstream names them.
var templateNames = []string{"statefulSetTemplate", "advancedStatefulSetTemplate", "cloneSetTemplate", "deploymentTemplate"}

// validateTemplate requires exactly one workload template whose labels, and pod template labels, the selector
// matches, and a pod template every pod can be created from.
func validateTemplate(t *kruiseappsv1alpha1.SubsetTemplate, selector labels.Selector) field.ErrorList {
	set := []bool{t.StatefulSetTemplate != nil, t.AdvancedStatefulSetTemplate != nil, t.CloneSetTemplate != nil, t.DeploymentTemplate != nil}
	var names []string
	for i, ok := range set {
		if ok {
			names = append(names, templateNames[i])
		}
	}
	switch {
	case len(names) == 0:
		return field.ErrorList{field.Required(templatePath, "should provide one of statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, or deploymentTemplate")}
	case len(names) > 1:
		return field.ErrorList{field.Invalid(templatePath, names, "should provide only one of statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, or deploymentTemplate")}
	}
	p := templatePath.Child(names[0])
	meta, pod, claims, kind := parts(t)
	var errs field.ErrorList
	if selector != nil && !selector.Matches(labels.Set(meta.Labels)) {
		errs = append(errs, field.Invalid(p.Child("metadata", "labels"), meta.Labels, "`selector` does not match template `labels`"))
	}
	if selector != nil && !selector.Matches(labels.Set(pod.Labels)) {
		errs = append(errs, field.Invalid(p.Child("spec", "template", "metadata", "labels"), pod.Labels, "`selector` does not match template `labels`"))
	}
	return append(errs, podtemplate.Validate(pod, claims, kind, p.Child("spec", "template"), p.Child("spec", "volumeClaimTemplates"))...)
}

func parts(t *kruiseappsv1alpha1.SubsetTemplate) (*metav1.ObjectMeta, *corev1.PodTemplateSpec, []corev1.PersistentVolumeClaim, string) {
	switch {
	case t.StatefulSetTemplate != nil:
		return &t.StatefulSetTemplate.ObjectMeta, &t.StatefulSetTemplate.Spec.Template, t.StatefulSetTemplate.Spec.VolumeClaimTemplates, "StatefulSet"
	case t.AdvancedStatefulSetTemplate != nil:
		a := t.AdvancedStatefulSetTemplate
		return &a.ObjectMeta, &a.Spec.Template, a.Spec.VolumeClaimTemplates, "StatefulSet"
	case t.CloneSetTemplate != nil:
		return &t.CloneSetTemplate.ObjectMeta, &t.CloneSetTemplate.Spec.Template, t.CloneSetTemplate.Spec.VolumeClaimTemplates, "cloneset"
	default:
		return &t.DeploymentTemplate.ObjectMeta, &t.DeploymentTemplate.Spec.Template, nil, "Deployment"
	}
}

// validateSubsets requires unique subset names that are DNS labels (they name workloads and label pods)
// and well-formed node selector terms and tolerations.
func validateSubsets(subsets []kruiseappsv1alpha1.Subset) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i := range subsets {
		s, p := &subsets[i], subsetsPath.Index(i)
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p.Child("name"), "a subset needs a name"))
		case seen.Has(s.Name):
			errs = append(errs, field.Duplicate(p.Child("name"), s.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(s.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, "invalid subset name: "+msg))
			}
		}
		seen.Insert(s.Name)
		errs = append(errs, validateNodeTerm(&s.NodeSelectorTerm, p.Child("nodeSelectorTerm"))...)
		errs = append(errs, validateTolerations(s.Tolerations, p.Child("tolerations"))...)
	}
	return errs
}

var nodeOperators = sets.New(corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
	corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt)

func validateNodeTerm(term *corev1.NodeSelectorTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, r := range term.MatchExpressions {
		rp := p.Child("matchExpressions").Index(i)
		for _, msg := range validation.IsQualifiedName(r.Key) {
			errs = append(errs, field.Invalid(rp.Child("key"), r.Key, msg))
		}
		if !nodeOperators.Has(r.Operator) {
			errs = append(errs, field.NotSupported(rp.Child("operator"), r.Operator, sets.List(nodeOperators)))
		}
	}
	return errs
}

func validateTolerations(ts []corev1.Toleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		switch {
		case t.Operator == corev1.TolerationOpExists && t.Value != "":
			errs = append(errs, field.Invalid(p.Index(i).Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
		case t.Operator != "" && t.Operator != corev1.TolerationOpExists && t.Operator != corev1.TolerationOpEqual:
			errs = append(errs, field.NotSupported(p.Index(i).Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		case t.Key == "" && t.Operator != corev1.TolerationOpExists:
			errs = append(errs, field.Invalid(p.Index(i).Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
	}
	return errs
}

// replicaSums are what upstream's replica rules add up over the subsets.
type replicaSums struct {
	fixed, mins, maxes   int64
	fixedCount, maxCount int
	hasFixed, hasBounds  bool
}

// validateReplicas: subset replicas are exclusive with min/max; fixed counts may not exceed spec.replicas
// (and must equal it when every subset fixes one); min/max need spec.replicas and one unbounded subset.
func validateReplicas(total *int32, subsets []kruiseappsv1alpha1.Subset) field.ErrorList {
	t := int32(-1)
	if total != nil {
		t = *total
	}
	sums, errs := sumReplicas(t, subsets)
	switch {
	case sums.hasFixed && sums.hasBounds:
		return append(errs, field.Invalid(subsetsPath, "replicas and minReplicas/maxReplicas", "subset replicas and minReplicas/maxReplicas are mutually exclusive in a UnitedDeployment"))
	case sums.hasBounds:
		return append(errs, boundsRules(t, len(subsets), sums)...)
	case t >= 0 && sums.fixed > int64(t):
		return append(errs, field.Invalid(subsetsPath, sums.fixed, fmt.Sprintf("sum of indicated subset replicas %d should not be greater than UnitedDeployment replicas %d", sums.fixed, t)))
	case t >= 0 && sums.fixedCount > 0 && sums.fixedCount == len(subsets) && sums.fixed != int64(t):
		return append(errs, field.Invalid(subsetsPath, sums.fixed, fmt.Sprintf("if replicas of all subsets are provided, the sum of indicated subset replicas %d should equal UnitedDeployment replicas %d", sums.fixed, t)))
	case t < 0 && sums.fixedCount != len(subsets):
		return append(errs, field.Invalid(subsetsPath, sums.fixed, "if UnitedDeployment replicas is not provided, replicas of all subsets should be provided"))
	}
	return errs
}

func boundsRules(total int32, subsets int, sums replicaSums) field.ErrorList {
	var errs field.ErrorList
	if total < 0 {
		errs = append(errs, field.Required(specPath.Child("replicas"), "spec.replicas must be set when a subset sets minReplicas/maxReplicas"))
	}
	if sums.maxCount >= subsets {
		errs = append(errs, field.Invalid(subsetsPath, sums.maxCount, "at least one subset.maxReplicas must be empty"))
	}
	if sums.mins > sums.maxes {
		errs = append(errs, field.Invalid(subsetsPath, sums.mins, "sum of indicated subset.minReplicas should not be greater than sum of indicated subset.maxReplicas"))
	}
	return errs
}

func sumReplicas(total int32, subsets []kruiseappsv1alpha1.Subset) (replicaSums, field.ErrorList) {
	var sums replicaSums
	var errs field.ErrorList
	for i := range subsets {
		s, p := &subsets[i], subsetsPath.Index(i)
		fixed, fErr := parse(total, s.Replicas, 0, p.Child("replicas"))
		mn, mnErr := parse(total, s.MinReplicas, 0, p.Child("minReplicas"))
		mx, mxErr := parse(total, s.MaxReplicas, math.MaxInt32, p.Child("maxReplicas"))
		errs = append(append(append(errs, fErr...), mnErr...), mxErr...)
		if mn > mx {
			errs = append(errs, field.Invalid(p.Child("minReplicas"), mn, fmt.Sprintf("must be less than or equal to maxReplicas (%d)", mx)))
		}
		sums.fixed, sums.mins, sums.maxes = sums.fixed+int64(fixed), sums.mins+int64(mn), sums.maxes+int64(mx)
		sums.hasFixed = sums.hasFixed || s.Replicas != nil
		sums.hasBounds = sums.hasBounds || s.MinReplicas != nil || s.MaxReplicas != nil
		if s.Replicas != nil {
			sums.fixedCount++
		}
		if s.MaxReplicas != nil {
			sums.maxCount++
		}
	}
	return sums, errs
}

func parse(total int32, v *intstr.IntOrString, unset int32, p *field.Path) (int32, field.ErrorList) {
	if v == nil {
		return unset, nil
	}
	n, err := plan.SubsetReplicas(total, *v)
	if err != nil {
		return unset, field.ErrorList{field.Invalid(p, v.String(), err.Error())}
	}
	return n, nil
}

// validatePartitions: a partition names an existing subset and is not negative.
func validatePartitions(s *kruiseappsv1alpha1.UnitedDeploymentSpec) field.ErrorList {
	if s.UpdateStrategy.ManualUpdate == nil {
		return nil
	}
	names := sets.New[string]()
	for _, sub := range s.Topology.Subsets {
		names.Insert(sub.Name)
	}
	p := specPath.Child("updateStrategy", "manualUpdate", "partitions")
	var errs field.ErrorList
	for _, name := range sets.List(sets.KeySet(s.UpdateStrategy.ManualUpdate.Partitions)) {
		if !names.Has(name) {
			errs = append(errs, field.Invalid(p.Key(name), name, fmt.Sprintf("subset %s does not exist", name)))
		}
		if v := s.UpdateStrategy.ManualUpdate.Partitions[name]; v < 0 {
			errs = append(errs, field.Invalid(p.Key(name), v, "must be greater than or equal to 0"))
		}
	}
	return errs
}

// validateUpdate: the selector is immutable (the subset workloads' selectors derive from it), and so are a
// kept subset's nodeSelectorTerm and tolerations, as upstream.
func validateUpdate(s, old *kruiseappsv1alpha1.UnitedDeploymentSpec) field.ErrorList {
	var errs field.ErrorList
	if !equality.Semantic.DeepEqual(s.Selector, old.Selector) {
		errs = append(errs, field.Forbidden(selectorPath, "field is immutable"))
	}
	before := map[string]*kruiseappsv1alpha1.Subset{}
	for i := range old.Topology.Subsets {
		before[old.Topology.Subsets[i].Name] = &old.Topology.Subsets[i]
	}
	for i, sub := range s.Topology.Subsets {
		prev, ok := before[sub.Name]
		if !ok {
			continue
		}
		if !equality.Semantic.DeepEqual(prev.NodeSelectorTerm, sub.NodeSelectorTerm) {
			errs = append(errs, field.Forbidden(subsetsPath.Index(i).Child("nodeSelectorTerm"), "may not be changed in an update"))
		}
		if !equality.Semantic.DeepEqual(prev.Tolerations, sub.Tolerations) {
			errs = append(errs, field.Forbidden(subsetsPath.Index(i).Child("tolerations"), "may not be changed in an update"))
		}
	}
	return errs
}
