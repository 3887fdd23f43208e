package admission

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

var annotationsPath = field.NewPath("metadata", "annotations")

// validateWorkloadRef checks the workload kind as upstream does: while the workload-type filter is on (the
// default), the kind must be one the engine knows; with it off, any kind is taken, but a blue-green release
// still needs a Deployment or a CloneSet.
func validateWorkloadRef(r *rolloutsv1beta1.Rollout, opts Options, names naming) field.ErrorList {
	ref, path := r.Spec.WorkloadRef, names.workloadRef
	if names.alpha && ref == (rolloutsv1beta1.ObjectRef{}) {
		// v1alpha1's workloadRef is a pointer, and upstream requires it.
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	if opts.FilterWorkloadType {
		errs = requiredRefFields(ref, path)
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil && (opts.FilterWorkloadType || r.Spec.Strategy.BlueGreen != nil) {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), ref.APIVersion, err.Error()))
	}
	if len(errs) > 0 {
		return errs
	}
	return validateWorkloadKind(gv.WithKind(ref.Kind).GroupKind(), r, opts, path.Child("kind"))
}

// requiredRefFields needs the kind named; a missing name is only warned about (see Warnings), since upstream
// accepts it.
func requiredRefFields(ref rolloutsv1beta1.ObjectRef, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct{ name, value string }{{"apiVersion", ref.APIVersion}, {"kind", ref.Kind}} {
		if f.value == "" {
			errs = append(errs, field.Required(path.Child(f.name), ""))
		}
	}
	return errs
}

func validateWorkloadKind(gk schema.GroupKind, r *rolloutsv1beta1.Rollout, opts Options, path *field.Path) field.ErrorList {
	if opts.FilterWorkloadType && !slices.Contains(supportedWorkloadKinds, gk) {
		return field.ErrorList{field.Invalid(path, gk.Kind,
			fmt.Sprintf("%s is not a supported workload kind (supported: %s)", gk, kindList(supportedWorkloadKinds)))}
	}
	if r.Spec.Strategy.BlueGreen != nil && !slices.Contains(blueGreenWorkloadKinds, gk) {
		return field.ErrorList{field.Invalid(path, gk.Kind,
			fmt.Sprintf("%s is not supported by a blue-green release (supported: %s)", gk, kindList(blueGreenWorkloadKinds)))}
	}
	return nil
}

func kindList(kinds []schema.GroupKind) string {
	names := make([]string, 0, len(kinds))
	for _, gk := range kinds {
		names = append(names, gk.String())
	}
	return strings.Join(names, ", ")
}

// validateStrategy checks the strategy; with an invalid workloadRef the rolling style is unknown and the
// rules that depend on it are skipped.
func validateStrategy(r *rolloutsv1beta1.Rollout, opts Options, names naming, refValid bool) field.ErrorList {
	s, path := &r.Spec.Strategy, field.NewPath("spec", "strategy")
	switch {
	case s.Canary == nil && s.BlueGreen == nil:
		return field.ErrorList{names.missingStrategy(path)}
	case s.Canary != nil && s.BlueGreen != nil:
		return field.ErrorList{field.Forbidden(path.Child("blueGreen"), "must not be set together with canary")}
	}
	c := stepContext{
		names:      names,
		style:      effectiveStyle(r),
		knownStyle: refValid,
		limit:      opts.partitionLimit(),
		hasRouting: len(s.GetTrafficRoutings()) > 0,
	}
	base := strategyPath(r)
	errs := validateSteps(s.GetSteps(), base.Child("steps"), c)
	return append(errs, validateTrafficRoutings(s.GetTrafficRoutings(), base.Child("trafficRoutings"))...)
}

// effectiveStyle is how the BatchRelease will release the workload: canary style exists for native
// Deployments only; any other kind is released by partition.
func effectiveStyle(r *rolloutsv1beta1.Rollout) rolloutsv1beta1.RollingStyleType {
	style := r.Spec.Strategy.GetRollingStyle()
	if style == rolloutsv1beta1.CanaryRollingStyle && workloadKind(r.Spec.WorkloadRef) != deploymentKind {
		return rolloutsv1beta1.PartitionRollingStyle
	}
	return style
}

func workloadKind(ref rolloutsv1beta1.ObjectRef) schema.GroupKind {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupKind{Kind: ref.Kind}
	}
	return schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
}

// usesTrafficRoutingObject reports whether the steps' traffic goes to a TrafficRouting object instead of
// the Rollout's own trafficRoutings.
func usesTrafficRoutingObject(r *rolloutsv1beta1.Rollout) bool {
	if r.Annotations[rolloutsv1beta1.TrafficRoutingAnnotation] != "" {
		return true
	}
	s := r.Spec.Strategy
	return (s.Canary != nil && s.Canary.TrafficRoutingRef != "") || (s.BlueGreen != nil && s.BlueGreen.TrafficRoutingRef != "")
}

// conflicts rejects a second Rollout for the same workload in the namespace.
func conflicts(r *rolloutsv1beta1.Rollout, others []rolloutsv1beta1.Rollout, path *field.Path) field.ErrorList {
	ref := r.Spec.WorkloadRef
	if ref.Name == "" {
		return nil
	}
	gk := workloadKind(ref)
	for i := range others {
		o := &others[i]
		if o.Name == r.Name || o.Namespace != r.Namespace {
			continue
		}
		if o.Spec.WorkloadRef.Name == ref.Name && workloadKind(o.Spec.WorkloadRef) == gk {
			return field.ErrorList{field.Invalid(path, ref.Kind+"/"+ref.Name,
				fmt.Sprintf("the workload is already released by Rollout %s; a workload may have at most one Rollout", o.Name))}
		}
	}
	return nil
}

// ValidateConflict reports whether another of the namespace's Rollouts already references r's workload.
func ValidateConflict(r *rolloutsv1beta1.Rollout, others []rolloutsv1beta1.Rollout) field.ErrorList {
	if r == nil {
		return nil
	}
	return conflicts(r, others, v1beta1Naming.workloadRef)
}
