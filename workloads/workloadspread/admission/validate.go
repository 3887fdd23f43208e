package admission

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/intorpercent"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread/internal/plan"
)

var (
	specPath    = field.NewPath("spec")
	targetPath  = specPath.Child("targetRef")
	subsetsPath = specPath.Child("subsets")
	strategy    = specPath.Child("scheduleStrategy")
)

// Targets are the workload kinds a WorkloadSpread may spread, by API group and kind (upstream's custom
// workload whitelist is not supported).
var Targets = []schema.GroupKind{
	{Group: "apps.kruise.io", Kind: "CloneSet"}, {Group: "apps", Kind: "Deployment"}, {Group: "apps", Kind: "ReplicaSet"},
	{Group: "batch", Kind: "Job"}, {Group: "apps", Kind: "StatefulSet"}, {Group: "apps.kruise.io", Kind: "StatefulSet"},
}

// Validate checks a WorkloadSpread being created or updated, given the WorkloadSpreads of its namespace.
func Validate(ws *kruiseappsv1alpha1.WorkloadSpread, others []kruiseappsv1alpha1.WorkloadSpread) field.ErrorList {
	errs := validateTarget(ws.Spec.TargetReference)
	errs = append(errs, validateSubsets(ws.Spec.Subsets)...)
	errs = append(errs, validateStrategy(ws.Spec.ScheduleStrategy)...)
	return append(errs, validateConflicts(ws, others)...)
}

// Warnings are what the API server tells the client about fields accepted for compatibility but not acted
// on: a manifest written for upstream still applies, and its author learns what differs.
func Warnings(ws *kruiseappsv1alpha1.WorkloadSpread) []string {
	if ws.Spec.TargetFilter != nil {
		return []string{"spec.targetFilter is not supported by this installation: every pod of the target is spread"}
	}
	return nil
}

// TargetKind is the group and kind a reference names; ok is false for an unreadable apiVersion.
func TargetKind(ref *kruiseappsv1alpha1.TargetReference) (schema.GroupKind, bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupKind{}, false
	}
	return gv.WithKind(ref.Kind).GroupKind(), true
}

func validateTarget(ref *kruiseappsv1alpha1.TargetReference) field.ErrorList {
	if ref == nil || ref.APIVersion == "" || ref.Kind == "" || ref.Name == "" {
		return field.ErrorList{field.Required(targetPath, "apiVersion, kind and name are required")}
	}
	gk, ok := TargetKind(ref)
	if !ok {
		return field.ErrorList{field.Invalid(targetPath.Child("apiVersion"), ref.APIVersion, "must be a group/version")}
	}
	for _, t := range Targets {
		if t == gk {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(targetPath, fmt.Sprintf("%s %s", ref.APIVersion, ref.Kind), []string{
		"apps.kruise.io CloneSet", "apps Deployment", "apps ReplicaSet", "batch Job", "apps StatefulSet", "apps.kruise.io StatefulSet"})}
}

func validateSubsets(subsets []kruiseappsv1alpha1.WorkloadSpreadSubset) field.ErrorList {
	if len(subsets) == 0 {
		return field.ErrorList{field.Required(subsetsPath, "at least one subset is required")}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range subsets {
		p := subsetsPath.Index(i)
		name := subsets[i].Name
		switch {
		case name == "":
			errs = append(errs, field.Required(p.Child("name"), "a subset needs a name"))
		case names.Has(name):
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		names.Insert(name)
		errs = append(errs, validateSubset(&subsets[i], p)...)
	}
	return errs
}

func validateSubset(s *kruiseappsv1alpha1.WorkloadSpreadSubset, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.MaxReplicas != nil {
		errs = append(errs, intorpercent.Validate(*s.MaxReplicas, p.Child("maxReplicas"))...)
	}
	if s.RequiredNodeSelectorTerm != nil {
		if _, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{*s.RequiredNodeSelectorTerm}}); err != nil {
			errs = append(errs, field.Invalid(p.Child("requiredNodeSelectorTerm"), s.RequiredNodeSelectorTerm, err.Error()))
		}
	}
	for i, t := range s.PreferredNodeSelectorTerms {
		if t.Weight < 1 || t.Weight > 100 {
			errs = append(errs, field.Invalid(p.Child("preferredNodeSelectorTerms").Index(i).Child("weight"), t.Weight, "must be in the range 1-100"))
		}
	}
	errs = append(errs, validateTolerations(s.Tolerations, p.Child("tolerations"))...)
	if len(s.Patch.Raw) > 0 {
		var obj map[string]any
		if err := json.Unmarshal(s.Patch.Raw, &obj); err != nil || obj == nil {
			errs = append(errs, field.Invalid(p.Child("patch"), string(s.Patch.Raw), "must be a JSON object"))
		} else if err := plan.CheckPatch(s.Patch.Raw); err != nil {
			errs = append(errs, field.Invalid(p.Child("patch"), string(s.Patch.Raw), "must merge into a pod: "+err.Error()))
		}
	}
	return errs
}

// validateTolerations checks what would make the pods the webhook injects them into invalid.
func validateTolerations(ts []corev1.Toleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		switch {
		case t.Operator == corev1.TolerationOpExists && t.Value != "":
			errs = append(errs, field.Invalid(p.Index(i).Child("value"), t.Value, "must be empty when operator is Exists"))
		case t.Operator != "" && t.Operator != corev1.TolerationOpExists && t.Operator != corev1.TolerationOpEqual:
			errs = append(errs, field.NotSupported(p.Index(i).Child("operator"), t.Operator, []string{"Equal", "Exists"}))
		case t.Key == "" && t.Operator != corev1.TolerationOpExists:
			errs = append(errs, field.Invalid(p.Index(i).Child("operator"), t.Operator, "must be Exists when key is empty"))
		}
	}
	return errs
}

func validateStrategy(s kruiseappsv1alpha1.WorkloadSpreadScheduleStrategy) field.ErrorList {
	switch s.Type {
	case "", kruiseappsv1alpha1.FixedWorkloadSpreadScheduleStrategyType:
		if s.Adaptive != nil {
			return field.ErrorList{field.Forbidden(strategy.Child("adaptive"), "adaptive is only allowed with type Adaptive")}
		}
	case kruiseappsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType:
		if s.Adaptive != nil && s.Adaptive.RescheduleCriticalSeconds != nil && *s.Adaptive.RescheduleCriticalSeconds < 0 {
			return field.ErrorList{field.Invalid(strategy.Child("adaptive", "rescheduleCriticalSeconds"),
				*s.Adaptive.RescheduleCriticalSeconds, "must not be negative")}
		}
	default:
		return field.ErrorList{field.NotSupported(strategy.Child("type"), s.Type, []string{"Fixed", "Adaptive"})}
	}
	return nil
}

// validateConflicts: two WorkloadSpreads over one workload would both place its pods.
func validateConflicts(ws *kruiseappsv1alpha1.WorkloadSpread, others []kruiseappsv1alpha1.WorkloadSpread) field.ErrorList {
	ref := ws.Spec.TargetReference
	if ref == nil {
		return nil
	}
	gk, _ := TargetKind(ref)
	for i := range others {
		o := &others[i]
		if o.Name == ws.Name || o.Spec.TargetReference == nil || o.Spec.TargetReference.Name != ref.Name {
			continue
		}
		if ogk, _ := TargetKind(o.Spec.TargetReference); ogk == gk {
			return field.ErrorList{field.Forbidden(targetPath, fmt.Sprintf("%s %s is spread by WorkloadSpread %s already", ref.Kind, ref.Name, o.Name))}
		}
	}
	return nil
}
