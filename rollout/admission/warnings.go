package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Warnings are what the webhook tells the writer of a v1beta1 Rollout it accepts: fields that upstream accepts
// too but that do nothing as written. Manifests written for upstream keep applying; their authors learn why a
// field has no effect.
func Warnings(r *rolloutsv1beta1.Rollout) []string {
	if r == nil {
		return nil
	}
	return hubWarnings(r, v1beta1Naming)
}

// V1alpha1Warnings is Warnings for a v1alpha1 Rollout, with its own field names.
func V1alpha1Warnings(r *rolloutsv1alpha1.Rollout) []string {
	hub, names, err := toHub(r)
	if err != nil {
		return nil
	}
	return hubWarnings(hub, names)
}

func hubWarnings(r *rolloutsv1beta1.Rollout, names naming) []string {
	var out []string
	if ref := r.Spec.WorkloadRef; ref.Name == "" && (!names.alpha || ref != (rolloutsv1beta1.ObjectRef{})) {
		out = append(out, fmt.Sprintf("%s: empty: the Rollout releases nothing until it names a workload", names.workloadRef.Child("name")))
	}
	if v, ok := r.Annotations[rolloutsv1beta1.RollbackInBatchAnnotation]; ok && v != "true" && v != "false" {
		out = append(out, fmt.Sprintf("%s: %q: only \"true\" turns rolling back in batches on; the Rollout rolls back at once",
			annotationsPath.Key(rolloutsv1beta1.RollbackInBatchAnnotation), v))
	}
	if r.Spec.Strategy.Canary == nil && r.Spec.Strategy.BlueGreen == nil {
		return out
	}
	base := strategyPath(r)
	out = append(out, thresholdWarning(r, base)...)
	out = append(out, routingWarnings(r, base, names)...)
	return append(out, orderWarnings(r.Spec.Strategy.GetSteps(), base.Child("steps"), names)...)
}

// thresholdWarning: upstream's schema takes any string as failureThreshold, and an unusable one excuses no pod.
func thresholdWarning(r *rolloutsv1beta1.Rollout, base *field.Path) []string {
	var th *intstr.IntOrString
	if s := r.Spec.Strategy; s.BlueGreen != nil {
		th = s.BlueGreen.FailureThreshold
	} else if s.Canary != nil {
		th = s.Canary.FailureThreshold
	}
	if th == nil {
		return nil
	}
	if n, err := intstr.GetScaledValueFromIntOrPercent(th, 100, true); err == nil && n >= 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s: %q is neither a number nor a percentage: no failed pod is tolerated",
		base.Child("failureThreshold"), th.String())}
}

// routingWarnings: traffic and matches need a provider to apply them; without one upstream accepts them and
// they change nothing.
func routingWarnings(r *rolloutsv1beta1.Rollout, base *field.Path, names naming) []string {
	routings := r.Spec.Strategy.GetTrafficRoutings()
	var out []string
	for i := range routings {
		tr := &routings[i]
		if tr.Ingress == nil && tr.Gateway == nil && len(tr.CustomNetworkRefs) == 0 {
			out = append(out, fmt.Sprintf("%s: names no ingress, gateway or customNetworkRefs: no traffic is routed",
				base.Child("trafficRoutings").Index(i)))
		}
	}
	if len(routings) > 0 || usesTrafficRoutingObject(r) {
		return out
	}
	steps := r.Spec.Strategy.GetSteps()
	for i := range steps {
		step := base.Child("steps").Index(i)
		// A v1alpha1 weight without replicas also sets the step's replicas: it does something.
		if steps[i].Traffic != nil && !names.derived(i) {
			out = append(out, fmt.Sprintf("%s: has no effect without %s", step.Child(names.trafficName()), base.Child("trafficRoutings")))
		}
		if len(steps[i].Matches) > 0 {
			out = append(out, fmt.Sprintf("%s: has no effect without %s", step.Child("matches"), base.Child("trafficRoutings")))
		}
	}
	return out
}

// orderWarnings: a step whose replicas are below an earlier step's of the same kind (not the one just before
// it, which validation rejects as upstream does) adds no pods, since a release never takes pods back.
func orderWarnings(steps []rolloutsv1beta1.CanaryStep, path *field.Path, names naming) []string {
	var out []string
	for i := 2; i < len(steps); i++ {
		v, isPercent, ok := replicasNumber(steps[i].Replicas)
		if !ok {
			continue
		}
		for j := 0; j < i-1; j++ {
			prev, prevPercent, prevOK := replicasNumber(steps[j].Replicas)
			if prevOK && prevPercent == isPercent && v < prev {
				out = append(out, fmt.Sprintf("%s: %s is less than steps[%d].%s %s: the step adds no pods",
					path.Index(i).Child(names.replicasName(i)), steps[i].Replicas.String(), j, names.replicasName(j), steps[j].Replicas.String()))
				break
			}
		}
	}
	return out
}
