package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// validateImmutable freezes what a release in flight depends on. old is the stored object; its phase is
// the live one.
func validateImmutable(old, r *rolloutsv1beta1.Rollout, names naming) field.ErrorList {
	phase := old.Status.Phase
	if phase != rolloutsv1beta1.RolloutPhaseProgressing && phase != rolloutsv1beta1.RolloutPhaseTerminating {
		return nil
	}
	detail := fmt.Sprintf("is immutable while the Rollout is %s", phase)
	var errs field.ErrorList
	if workloadKind(old.Spec.WorkloadRef) != workloadKind(r.Spec.WorkloadRef) || old.Spec.WorkloadRef.Name != r.Spec.WorkloadRef.Name {
		errs = append(errs, field.Forbidden(names.workloadRef, detail))
	}
	if !equality.Semantic.DeepEqual(old.Spec.Strategy.GetTrafficRoutings(), r.Spec.Strategy.GetTrafficRoutings()) {
		errs = append(errs, field.Forbidden(strategyPath(r).Child("trafficRoutings"), detail))
	}
	if old.Spec.Strategy.GetRollingStyle() != r.Spec.Strategy.GetRollingStyle() {
		errs = append(errs, field.Forbidden(names.stylePath(r), "the rolling style "+detail))
	}
	// Upstream freezes the number of steps of a v1beta1 Rollout only.
	if !names.alpha && len(old.Spec.Strategy.GetSteps()) != len(r.Spec.Strategy.GetSteps()) {
		errs = append(errs, field.Forbidden(strategyPath(r).Child("steps"), "the number of steps "+detail))
	}
	return errs
}
