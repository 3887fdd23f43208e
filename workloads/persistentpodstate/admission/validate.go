package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var (
	specPath      = field.NewPath("spec")
	targetPath    = specPath.Child("targetRef")
	preferredPath = specPath.Child("preferredPersistentTopology")
)

// Targets are the kinds a PersistentPodState may keep the pods of: the native StatefulSet and the Advanced
// one, by API group (upstream's custom workload whitelist is not supported).
var Targets = []schema.GroupKind{{Group: "apps", Kind: "StatefulSet"}, {Group: "apps.kruise.io", Kind: "StatefulSet"}}

// Validate checks a PersistentPodState being created (old nil) or updated from old, given the other
// PersistentPodStates of its namespace.
func Validate(pps, old *kruiseappsv1alpha1.PersistentPodState, others []kruiseappsv1alpha1.PersistentPodState) field.ErrorList {
	errs := validateTarget(pps.Spec.TargetReference)
	if pps.Spec.RequiredPersistentTopology == nil && len(pps.Spec.PreferredPersistentTopology) == 0 {
		errs = append(errs, field.Required(specPath, "requiredPersistentTopology and preferredPersistentTopology cannot both be empty"))
	}
	errs = append(errs, validateWeights(pps.Spec.PreferredPersistentTopology)...)
	if old != nil && !equality.Semantic.DeepEqual(pps.Spec.TargetReference, old.Spec.TargetReference) {
		errs = append(errs, field.Forbidden(targetPath, "targetRef cannot be modified"))
	}
	return append(errs, validateConflicts(pps, others)...)
}

func validateTarget(ref kruiseappsv1alpha1.TargetReference) field.ErrorList {
	if ref.APIVersion == "" || ref.Kind == "" || ref.Name == "" {
		return field.ErrorList{field.Required(targetPath, "apiVersion, kind and name are required")}
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return field.ErrorList{field.Invalid(targetPath.Child("apiVersion"), ref.APIVersion, err.Error())}
	}
	for _, t := range Targets {
		if t == gv.WithKind(ref.Kind).GroupKind() {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(targetPath, fmt.Sprintf("%s %s", ref.APIVersion, ref.Kind),
		[]string{"apps/v1 StatefulSet", "apps.kruise.io/v1beta1 StatefulSet", "apps.kruise.io/v1alpha1 StatefulSet"})}
}

// validateWeights: a weight outside 1-100 would make every pod the webhook injects it into invalid, so the
// StatefulSet could not create its pods again (upstream does not check it).
func validateWeights(terms []kruiseappsv1alpha1.PreferredTopologyTerm) field.ErrorList {
	var errs field.ErrorList
	for i, t := range terms {
		if t.Weight < 1 || t.Weight > 100 {
			errs = append(errs, field.Invalid(preferredPath.Index(i).Child("weight"), t.Weight, "must be in the range 1-100"))
		}
	}
	return errs
}

// validateConflicts: a pod can be kept by one PersistentPodState only.
func validateConflicts(pps *kruiseappsv1alpha1.PersistentPodState, others []kruiseappsv1alpha1.PersistentPodState) field.ErrorList {
	mine := groupKindName(pps.Spec.TargetReference)
	for i := range others {
		other := &others[i]
		if other.Name != pps.Name && other.DeletionTimestamp == nil && groupKindName(other.Spec.TargetReference) == mine {
			return field.ErrorList{field.Invalid(targetPath, pps.Spec.TargetReference,
				"targetRef is in conflict with other PersistentPodState "+other.Name)}
		}
	}
	return nil
}

// groupKindName identifies a target whatever version names it.
func groupKindName(ref kruiseappsv1alpha1.TargetReference) string {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return gv.Group + "/" + ref.Kind + "/" + ref.Name
}
