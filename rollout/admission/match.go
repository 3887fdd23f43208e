package admission

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Matches reports whether r releases the workload of kind gk named namespace/name: r is in the same
// namespace, not being deleted, not Disabled, references the workload by group, kind and name, and has a
// strategy.
func Matches(r *rolloutsv1beta1.Rollout, namespace string, gk schema.GroupKind, name string) bool {
	switch {
	case r == nil || r.Namespace != namespace || r.DeletionTimestamp != nil:
		return false
	case r.Status.Phase == rolloutsv1beta1.RolloutPhaseDisabled:
		return false
	case r.Spec.Strategy.Canary == nil && r.Spec.Strategy.BlueGreen == nil:
		return false
	}
	ref := r.Spec.WorkloadRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == gk.Group && ref.Kind == gk.Kind && ref.Name == name
}

// MatchingRollout returns the Rollout of rollouts that releases the workload, or nil. Should several match
// (the validating webhook prevents it), the one with the smallest name wins, so the choice is stable.
func MatchingRollout(rollouts []rolloutsv1beta1.Rollout, namespace string, gk schema.GroupKind, name string) *rolloutsv1beta1.Rollout {
	var found *rolloutsv1beta1.Rollout
	for i := range rollouts {
		r := &rollouts[i]
		if Matches(r, namespace, gk, name) && (found == nil || r.Name < found.Name) {
			found = r
		}
	}
	return found
}

func hasTrafficRoutings(r *rolloutsv1beta1.Rollout) bool {
	return len(r.Spec.Strategy.GetTrafficRoutings()) > 0
}
