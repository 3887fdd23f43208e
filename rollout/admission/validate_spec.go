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

// validateRolloutAnnotations checks the Rollout annotations the engine parses.
func validateRolloutAnnotations(annotations map[string]string) field.ErrorList {
	v, ok := annotations[rolloutsv1beta1.RollbackInBatchAnnotation]
	if !ok || v == "true" || v == "false" {
		return nil
	}
	return field.ErrorList{field.NotSupported(annotationsPath.Key(rolloutsv1beta1.RollbackInBatchAnnotation),
		v, []string{"true", "false"})}
}

func validateWorkloadRef(r *rolloutsv1beta1.Rollout, opts Options, names naming) field.ErrorList {
	ref, path := r.Spec.WorkloadRef, names.workloadRef
	if ref == (rolloutsv1beta1.ObjectRef{}) {
		return field.ErrorList{field.Required(path, "")}
	}
	errs := requiredRefFields(ref, path)
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), ref.APIVersion, err.Error()))
	}
	if len(errs) > 0 {
		return errs
	}
	return validateWorkloadKind(gv.WithKind(ref.Kind).GroupKind(), r, opts, path.Child("kind"))
}

func requiredRefFields(ref rolloutsv1beta1.ObjectRef, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct{ name, value string }{{"apiVersion", ref.APIVersion}, {"kind", ref.Kind}, {"name", ref.Name}} {
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
	errs = append(errs, validateTrafficRoutings(s.GetTrafficRoutings(), base.Child("trafficRoutings"))...)
	if !c.hasRouting && !usesTrafficRoutingObject(r) {
		errs = append(errs, trafficWithoutRouting(s.GetSteps(), base, names)...)
	}
	return errs
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

// trafficWithoutRouting rejects traffic and matches that nothing would apply. A v1alpha1 weight without
// replicas is exempt: there it also sets the step's replicas.
func trafficWithoutRouting(steps []rolloutsv1beta1.CanaryStep, base *field.Path, names naming) field.ErrorList {
	var errs field.ErrorList
	detail := fmt.Sprintf("requires %s to be set", base.Child("trafficRoutings"))
	for i := range steps {
		step := base.Child("steps").Index(i)
		if steps[i].Traffic != nil && !names.derived(i) {
			errs = append(errs, field.Forbidden(step.Child(names.trafficName()), detail))
		}
		if len(steps[i].Matches) > 0 {
			errs = append(errs, field.Forbidden(step.Child("matches"), detail))
		}
	}
	return errs
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
