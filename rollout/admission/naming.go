package admission

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// naming spells field paths and values in the API version the user wrote. Validation always runs on the
// v1beta1 form; a v1alpha1 Rollout is converted first, and its errors must still point at its own fields
// (spec.objectRef.workloadRef, steps[i].weight).
type naming struct {
	alpha       bool
	workloadRef *field.Path
	// weights are the v1alpha1 step weights, by step index.
	weights []*int32
	// fromWeight marks v1alpha1 steps without replicas, whose replicas conversion derived from the weight.
	fromWeight []bool
}

var v1beta1Naming = naming{workloadRef: field.NewPath("spec", "workloadRef")}

func v1alpha1Naming(r *rolloutsv1alpha1.Rollout) naming {
	n := naming{alpha: true, workloadRef: field.NewPath("spec", "objectRef", "workloadRef")}
	if r.Spec.Strategy.Canary == nil {
		return n
	}
	for _, s := range r.Spec.Strategy.Canary.Steps {
		n.weights = append(n.weights, s.Weight)
		n.fromWeight = append(n.fromWeight, s.Replicas == nil && s.Weight != nil)
	}
	return n
}

// derived reports whether step i's replicas came from its weight.
func (n naming) derived(i int) bool {
	return i < len(n.fromWeight) && n.fromWeight[i]
}

func (n naming) weight(i int) *int32 {
	if i < len(n.weights) {
		return n.weights[i]
	}
	return nil
}

// replicasName is the field that holds step i's replicas.
func (n naming) replicasName(i int) string {
	if n.derived(i) {
		return "weight"
	}
	return "replicas"
}

// replicasValue is step i's replicas as the user wrote them.
func (n naming) replicasValue(i int, replicas string) any {
	if w := n.weight(i); n.derived(i) && w != nil {
		return int64(*w)
	}
	return replicas
}

func (n naming) trafficName() string {
	if n.alpha {
		return "weight"
	}
	return "traffic"
}

// trafficValue is step i's traffic as the user wrote it.
func (n naming) trafficValue(i int, traffic string) any {
	if w := n.weight(i); n.alpha && w != nil {
		return int64(*w)
	}
	return traffic
}

func (n naming) trafficDetail(blueGreen bool) string {
	switch {
	case n.alpha:
		return "must be greater than 0 and at most 100"
	case blueGreen:
		return `must be a percentage with "0%" <= traffic <= "100%" in a blue-green release`
	default:
		return `must be a percentage with "0%" < traffic <= "100%" in a canary release`
	}
}

// missingReplicas is the error of a step without replicas.
func (n naming) missingReplicas(step *field.Path) *field.Error {
	if n.alpha {
		return field.Required(step, "weight or replicas is required")
	}
	return field.Required(step.Child("replicas"), "")
}

// missingStrategy is the error of a strategy with neither canary nor blueGreen.
func (n naming) missingStrategy(strategy *field.Path) *field.Error {
	if n.alpha {
		return field.Required(strategy.Child("canary"), "")
	}
	return field.Required(strategy, "exactly one of canary and blueGreen is required")
}

// stylePath is where the rolling style of r is chosen.
func (n naming) stylePath(r *rolloutsv1beta1.Rollout) *field.Path {
	switch {
	case n.alpha:
		return field.NewPath("metadata", "annotations").Key(rolloutsv1beta1.RollingStyleAnnotation)
	case r.Spec.Strategy.Canary != nil:
		return strategyPath(r).Child("enableExtraWorkloadForCanary")
	default:
		return field.NewPath("spec", "strategy")
	}
}

// strategyPath is spec.strategy.canary or spec.strategy.blueGreen, whichever is set.
func strategyPath(r *rolloutsv1beta1.Rollout) *field.Path {
	if r.Spec.Strategy.BlueGreen != nil {
		return field.NewPath("spec", "strategy", "blueGreen")
	}
	return field.NewPath("spec", "strategy", "canary")
}
