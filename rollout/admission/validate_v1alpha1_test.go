package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func weightStep(weight int32) rolloutsv1alpha1.CanaryStep {
	return rolloutsv1alpha1.CanaryStep{TrafficRoutingStrategy: rolloutsv1alpha1.TrafficRoutingStrategy{Weight: ptr.To(weight)}}
}

func weightReplicasStep(weight int32, replicas *intstr.IntOrString) rolloutsv1alpha1.CanaryStep {
	s := weightStep(weight)
	s.Replicas = replicas
	return s
}

func alphaRouting() rolloutsv1alpha1.TrafficRoutingRef {
	return rolloutsv1alpha1.TrafficRoutingRef{Service: "echo", Ingress: &rolloutsv1alpha1.IngressTrafficRouting{Name: "echo"}}
}

// alphaRollout is a valid v1alpha1 Rollout of the Deployment ns/echo (canary style by default), whose
// weights also set its replicas.
func alphaRollout() *rolloutsv1alpha1.Rollout {
	return &rolloutsv1alpha1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"},
		Spec: rolloutsv1alpha1.RolloutSpec{
			ObjectRef: rolloutsv1alpha1.ObjectRef{WorkloadRef: &rolloutsv1alpha1.WorkloadRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "echo"}},
			Strategy: rolloutsv1alpha1.RolloutStrategy{Canary: &rolloutsv1alpha1.CanaryStrategy{
				Steps: []rolloutsv1alpha1.CanaryStep{weightStep(20), weightStep(60), weightStep(100)},
			}},
		},
	}
}

func alphaSteps(r *rolloutsv1alpha1.Rollout, steps ...rolloutsv1alpha1.CanaryStep) {
	r.Spec.Strategy.Canary.Steps = steps
}

func withAlphaRouting(r *rolloutsv1alpha1.Rollout) {
	r.Spec.Strategy.Canary.TrafficRoutings = []rolloutsv1alpha1.TrafficRoutingRef{alphaRouting()}
}

func setStyle(r *rolloutsv1alpha1.Rollout, style string) {
	r.Annotations = map[string]string{rolloutsv1alpha1.RolloutStyleAnnotation: style}
}

func TestValidateV1alpha1Rollout(t *testing.T) {
	const limitDetail = "must not be greater than the partition percent limit 50% in a partition-style release when the step has traffic or matches"
	cases := []struct {
		name   string
		mutate func(r *rolloutsv1alpha1.Rollout)
		want   []string
		warn   []string
	}{
		{name: "weights without routing set replicas"},
		{name: "weights with routing", mutate: withAlphaRouting},
		{name: "replicas only", mutate: func(r *rolloutsv1alpha1.Rollout) {
			alphaSteps(r, rolloutsv1alpha1.CanaryStep{Replicas: intReplicas(1)}, rolloutsv1alpha1.CanaryStep{Replicas: pctReplicas("100%")})
		}},
		{name: "rolling style in any case", mutate: func(r *rolloutsv1alpha1.Rollout) {
			setStyle(r, "Partition")
			alphaSteps(r, weightStep(20), weightStep(50))
		}},
		{name: "canary style allows weights above the partition limit", mutate: func(r *rolloutsv1alpha1.Rollout) {
			setStyle(r, "CANARY")
			withAlphaRouting(r)
		}},
		{name: "unknown rolling style", mutate: func(r *rolloutsv1alpha1.Rollout) { setStyle(r, "bluegreen") },
			want: []string{`metadata.annotations[rollouts.kruise.io/rolling-style]: Unsupported value: "bluegreen": supported values: "canary", "partition"`}},
		{name: "no workloadRef", mutate: func(r *rolloutsv1alpha1.Rollout) { r.Spec.ObjectRef.WorkloadRef = nil },
			want: []string{"spec.objectRef.workloadRef: Required value"}},
		{name: "unsupported kind", mutate: func(r *rolloutsv1alpha1.Rollout) { r.Spec.ObjectRef.WorkloadRef.Kind = "Job" },
			want: []string{`spec.objectRef.workloadRef.kind: Invalid value: "Job": Job.apps is not a supported workload kind ` +
				`(supported: Deployment.apps, ReplicaSet.apps, StatefulSet.apps, DaemonSet.apps, CloneSet.apps.kruise.io, StatefulSet.apps.kruise.io, DaemonSet.apps.kruise.io)`}},
		{name: "no canary", mutate: func(r *rolloutsv1alpha1.Rollout) { r.Spec.Strategy.Canary = nil },
			want: []string{"spec.strategy.canary: Required value"}},
		{name: "step without weight or replicas", mutate: func(r *rolloutsv1alpha1.Rollout) {
			alphaSteps(r, weightStep(10), rolloutsv1alpha1.CanaryStep{})
		}, want: []string{"spec.strategy.canary.steps[1]: Required value: weight or replicas is required"}},
		{name: "zero weight", mutate: func(r *rolloutsv1alpha1.Rollout) { alphaSteps(r, weightStep(0)) },
			want: []string{"spec.strategy.canary.steps[0].weight: Invalid value: 0: must be greater than 0 and at most 100"}},
		{name: "weight over 100 with replicas", mutate: func(r *rolloutsv1alpha1.Rollout) {
			withAlphaRouting(r)
			alphaSteps(r, weightReplicasStep(101, intReplicas(1)))
		}, want: []string{"spec.strategy.canary.steps[0].weight: Invalid value: 101: must be greater than 0 and at most 100"}},
		{name: "bad replicas next to a weight", mutate: func(r *rolloutsv1alpha1.Rollout) {
			withAlphaRouting(r)
			alphaSteps(r, weightReplicasStep(5, intReplicas(0)))
		}, want: []string{`spec.strategy.canary.steps[0].replicas: Invalid value: "0": must be greater than 0`}},
		{name: "partition weight over the limit", mutate: func(r *rolloutsv1alpha1.Rollout) { setStyle(r, "partition") },
			want: []string{"spec.strategy.canary.steps[1].weight: Invalid value: 60: " + limitDetail,
				"spec.strategy.canary.steps[2].weight: Invalid value: 100: " + limitDetail}},
		{name: "StatefulSet is partition style", mutate: func(r *rolloutsv1alpha1.Rollout) {
			r.Spec.ObjectRef.WorkloadRef.Kind = "StatefulSet"
			alphaSteps(r, weightStep(20), weightStep(60))
		}, want: []string{"spec.strategy.canary.steps[1].weight: Invalid value: 60: " + limitDetail}},
		{name: "partition replicas over the limit with weight", mutate: func(r *rolloutsv1alpha1.Rollout) {
			setStyle(r, "partition")
			withAlphaRouting(r)
			alphaSteps(r, weightReplicasStep(5, pctReplicas("80%")))
		}, want: []string{`spec.strategy.canary.steps[0].replicas: Invalid value: "80%": ` + limitDetail}},
		{name: "decreasing weights that set replicas", mutate: func(r *rolloutsv1alpha1.Rollout) {
			alphaSteps(r, weightStep(50), weightStep(20))
		}, want: []string{"spec.strategy.canary.steps[1].weight: Invalid value: 20: must not be less than steps[0].weight"}},
		{name: "decreasing weights that set replicas, with routing", mutate: func(r *rolloutsv1alpha1.Rollout) {
			withAlphaRouting(r)
			alphaSteps(r, weightStep(50), weightStep(20))
		}, want: []string{"spec.strategy.canary.steps[1].weight: Invalid value: 20: must not be less than steps[0].weight"}},
		{name: "decreasing weights beside replicas, with routing", mutate: func(r *rolloutsv1alpha1.Rollout) {
			withAlphaRouting(r)
			alphaSteps(r, weightReplicasStep(20, intReplicas(1)), weightReplicasStep(10, intReplicas(2)))
		}, want: []string{"spec.strategy.canary.steps[1].weight: Invalid value: 10: must not be less than steps[0].weight"}},
		{name: "decreasing replicas beside weights", mutate: func(r *rolloutsv1alpha1.Rollout) {
			withAlphaRouting(r)
			alphaSteps(r, weightReplicasStep(10, intReplicas(2)), weightReplicasStep(20, intReplicas(1)))
		}, want: []string{`spec.strategy.canary.steps[1].replicas: Invalid value: "1": must not be less than steps[0].replicas`}},
		{name: "weight beside replicas without routing", mutate: func(r *rolloutsv1alpha1.Rollout) {
			alphaSteps(r, weightReplicasStep(10, intReplicas(1)))
		}, warn: []string{"spec.strategy.canary.steps[0].weight: has no effect without spec.strategy.canary.trafficRoutings"}},
		{name: "matches without routing", mutate: func(r *rolloutsv1alpha1.Rollout) {
			s := weightStep(10)
			s.Matches = []rolloutsv1alpha1.HttpRouteMatch{{Headers: []gatewayv1.HTTPHeaderMatch{{Name: "x", Value: "y"}}}}
			alphaSteps(r, s)
		}, warn: []string{"spec.strategy.canary.steps[0].matches: has no effect without spec.strategy.canary.trafficRoutings"}},
		{name: "routing without service", mutate: func(r *rolloutsv1alpha1.Rollout) {
			r.Spec.Strategy.Canary.TrafficRoutings = []rolloutsv1alpha1.TrafficRoutingRef{{Ingress: &rolloutsv1alpha1.IngressTrafficRouting{Name: "i"}}}
		}, want: []string{"spec.strategy.canary.trafficRoutings[0].service: Required value"}},
		{name: "rollback-in-batch", mutate: func(r *rolloutsv1alpha1.Rollout) {
			r.Annotations = map[string]string{rolloutsv1beta1.RollbackInBatchAnnotation: "True"}
		}, warn: []string{`metadata.annotations[rollouts.kruise.io/rollback-in-batch]: "True": only "true" turns rolling back in batches on; the Rollout rolls back at once`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := alphaRollout()
			if tc.mutate != nil {
				tc.mutate(r)
			}
			got := errorStrings(ValidateV1alpha1Rollout(r, nil, DefaultOptions()))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.warn, V1alpha1Warnings(r)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateV1alpha1RolloutConflict(t *testing.T) {
	other := *canaryRollout()
	other.Name = "first"
	got := errorStrings(ValidateV1alpha1Rollout(alphaRollout(), []rolloutsv1beta1.Rollout{other}, DefaultOptions()))
	want := []string{`spec.objectRef.workloadRef: Invalid value: "Deployment/echo": the workload is already released by Rollout first; a workload may have at most one Rollout`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestValidateV1alpha1RolloutNil(t *testing.T) {
	if errs := ValidateV1alpha1Rollout(nil, nil, DefaultOptions()); len(errs) != 1 {
		t.Errorf("ValidateV1alpha1Rollout(nil) = %v, want one error", errs)
	}
	if errs := ValidateV1alpha1RolloutUpdate(alphaRollout(), nil, nil, DefaultOptions()); len(errs) != 1 {
		t.Errorf("ValidateV1alpha1RolloutUpdate(old, nil) = %v, want one error", errs)
	}
}
