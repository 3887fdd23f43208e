package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func intReplicas(n int32) *intstr.IntOrString { return ptr.To(intstr.FromInt32(n)) }

func pctReplicas(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }

func step(replicas *intstr.IntOrString) rolloutsv1beta1.CanaryStep {
	return rolloutsv1beta1.CanaryStep{Replicas: replicas}
}

func trafficStep(replicas *intstr.IntOrString, traffic string) rolloutsv1beta1.CanaryStep {
	s := step(replicas)
	s.Traffic = ptr.To(traffic)
	return s
}

func ingressRouting() rolloutsv1beta1.TrafficRoutingRef {
	return rolloutsv1beta1.TrafficRoutingRef{
		Service: "echo", Ingress: &rolloutsv1beta1.IngressTrafficRouting{Name: "echo"},
	}
}

// canaryRollout is a valid partition-style canary Rollout of the Deployment ns/echo.
func canaryRollout() *rolloutsv1beta1.Rollout {
	return &rolloutsv1beta1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"},
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "echo"},
			Strategy: rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{
				Steps: []rolloutsv1beta1.CanaryStep{step(intReplicas(1)), step(pctReplicas("50%")), step(pctReplicas("100%"))},
			}},
		},
	}
}

// blueGreenRollout is a valid blue-green Rollout of the CloneSet ns/echo with ingress routing.
func blueGreenRollout() *rolloutsv1beta1.Rollout {
	r := canaryRollout()
	r.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "echo"}
	r.Spec.Strategy = rolloutsv1beta1.RolloutStrategy{BlueGreen: &rolloutsv1beta1.BlueGreenStrategy{
		Steps: []rolloutsv1beta1.CanaryStep{
			trafficStep(pctReplicas("50%"), "0%"), trafficStep(pctReplicas("100%"), "100%"),
		},
		TrafficRoutings: []rolloutsv1beta1.TrafficRoutingRef{ingressRouting()},
	}}
	return r
}

func errorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

type validateCase struct {
	name   string
	base   func() *rolloutsv1beta1.Rollout
	mutate func(r *rolloutsv1beta1.Rollout)
	opts   *Options
	want   []string
	// warn are the warnings the case must get (none when nil).
	warn []string
}

func runValidateCases(t *testing.T, cases []validateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.base
			if base == nil {
				base = canaryRollout
			}
			r := base()
			if tc.mutate != nil {
				tc.mutate(r)
			}
			opts := DefaultOptions()
			if tc.opts != nil {
				opts = *tc.opts
			}
			got := errorStrings(ValidateRollout(r, nil, opts))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.warn, Warnings(r)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func canarySteps(r *rolloutsv1beta1.Rollout, steps ...rolloutsv1beta1.CanaryStep) {
	r.Spec.Strategy.Canary.Steps = steps
}

func TestValidateRolloutAccepts(t *testing.T) {
	runValidateCases(t, []validateCase{
		{name: "partition canary of a Deployment"},
		{name: "blue-green CloneSet with 0% traffic", base: blueGreenRollout},
		{name: "blue-green Deployment", base: blueGreenRollout, mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "echo"}
		}},
		{name: "every supported kind", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "echo"}
		}},
		{name: "unknown kind without filtering", opts: &Options{}, mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: "example.com/v1", Kind: "GameServerSet", Name: "echo"}
		}},
		{name: "integer and percentage steps are not compared", mutate: func(r *rolloutsv1beta1.Rollout) {
			canarySteps(r, step(pctReplicas("20%")), step(intReplicas(1)), step(pctReplicas("20%")), step(intReplicas(3)))
		}},
		{name: "equal replicas in a row", mutate: func(r *rolloutsv1beta1.Rollout) {
			canarySteps(r, step(intReplicas(2)), step(intReplicas(2)))
		}},
		{name: "canary traffic with routing", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.Canary.TrafficRoutings = []rolloutsv1beta1.TrafficRoutingRef{ingressRouting()}
			canarySteps(r, trafficStep(intReplicas(1), "5%"), trafficStep(pctReplicas("50%"), "100%"), step(pctReplicas("100%")))
		}},
		{name: "partition limit may be raised", opts: &Options{FilterWorkloadType: true, PartitionPercentLimit: 80}, mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.Canary.TrafficRoutings = []rolloutsv1beta1.TrafficRoutingRef{ingressRouting()}
			canarySteps(r, trafficStep(pctReplicas("80%"), "50%"))
		}},
		{name: "canary style may exceed the partition limit", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.Canary.EnableExtraWorkloadForCanary = true
			r.Spec.Strategy.Canary.TrafficRoutings = []rolloutsv1beta1.TrafficRoutingRef{ingressRouting()}
			canarySteps(r, trafficStep(pctReplicas("80%"), "50%"))
		}},
		{name: "traffic through a TrafficRouting object", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Annotations = map[string]string{rolloutsv1beta1.TrafficRoutingAnnotation: "tr"}
			canarySteps(r, trafficStep(intReplicas(1), "5%"))
		}},
		{name: "gateway and custom providers", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.Canary.TrafficRoutings = []rolloutsv1beta1.TrafficRoutingRef{{
				Service:           "echo",
				Gateway:           &rolloutsv1beta1.GatewayTrafficRouting{HTTPRouteName: ptr.To("echo")},
				CustomNetworkRefs: []rolloutsv1beta1.ObjectRef{{APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Name: "vs"}},
			}}
		}},
		{name: "rollback-in-batch true", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Annotations = map[string]string{rolloutsv1beta1.RollbackInBatchAnnotation: "true"}
		}},
		{name: "exactly 50 steps", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.Canary.Steps = make([]rolloutsv1beta1.CanaryStep, MaxSteps)
			for i := range r.Spec.Strategy.Canary.Steps {
				r.Spec.Strategy.Canary.Steps[i] = step(intReplicas(int32(i + 1)))
			}
		}},
	})
}

func TestValidateRolloutWorkloadRef(t *testing.T) {
	runValidateCases(t, []validateCase{
		{name: "missing", mutate: func(r *rolloutsv1beta1.Rollout) { r.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{} },
			want: []string{"spec.workloadRef.apiVersion: Required value", "spec.workloadRef.kind: Required value"},
			warn: []string{"spec.workloadRef.name: empty: the Rollout releases nothing until it names a workload"}},
		{name: "missing without filtering is upstream's", opts: &Options{}, mutate: func(r *rolloutsv1beta1.Rollout) { r.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{} },
			warn: []string{"spec.workloadRef.name: empty: the Rollout releases nothing until it names a workload"}},
		{name: "missing name is accepted as upstream does", mutate: func(r *rolloutsv1beta1.Rollout) { r.Spec.WorkloadRef.Name = "" },
			warn: []string{"spec.workloadRef.name: empty: the Rollout releases nothing until it names a workload"}},
		{name: "missing apiVersion and kind", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.WorkloadRef.APIVersion, r.Spec.WorkloadRef.Kind = "", ""
		}, want: []string{"spec.workloadRef.apiVersion: Required value", "spec.workloadRef.kind: Required value"}},
		{name: "malformed apiVersion", mutate: func(r *rolloutsv1beta1.Rollout) { r.Spec.WorkloadRef.APIVersion = "a/b/c" },
			want: []string{`spec.workloadRef.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c`}},
		{name: "unsupported kind", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: "example.com/v1", Kind: "GameServerSet", Name: "echo"}
		}, want: []string{`spec.workloadRef.kind: Invalid value: "GameServerSet": GameServerSet.example.com is not a supported workload kind ` +
			`(supported: Deployment.apps, ReplicaSet.apps, StatefulSet.apps, DaemonSet.apps, CloneSet.apps.kruise.io, StatefulSet.apps.kruise.io, DaemonSet.apps.kruise.io)`}},
		{name: "Deployment in the wrong group", mutate: func(r *rolloutsv1beta1.Rollout) { r.Spec.WorkloadRef.APIVersion = "extensions/v1beta1" },
			want: []string{`spec.workloadRef.kind: Invalid value: "Deployment": Deployment.extensions is not a supported workload kind ` +
				`(supported: Deployment.apps, ReplicaSet.apps, StatefulSet.apps, DaemonSet.apps, CloneSet.apps.kruise.io, StatefulSet.apps.kruise.io, DaemonSet.apps.kruise.io)`}},
		{name: "blue-green StatefulSet", base: blueGreenRollout, mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "echo"}
		}, want: []string{`spec.workloadRef.kind: Invalid value: "StatefulSet": StatefulSet.apps is not supported by a blue-green release ` +
			`(supported: Deployment.apps, CloneSet.apps.kruise.io)`}},
		{name: "blue-green custom kind even without filtering", base: blueGreenRollout, opts: &Options{}, mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: "example.com/v1", Kind: "GameServerSet", Name: "echo"}
		}, want: []string{`spec.workloadRef.kind: Invalid value: "GameServerSet": GameServerSet.example.com is not supported by a blue-green release ` +
			`(supported: Deployment.apps, CloneSet.apps.kruise.io)`}},
	})
}

func TestValidateRolloutStrategy(t *testing.T) {
	runValidateCases(t, []validateCase{
		{name: "neither canary nor blueGreen", mutate: func(r *rolloutsv1beta1.Rollout) { r.Spec.Strategy.Canary = nil },
			want: []string{"spec.strategy: Required value: exactly one of canary and blueGreen is required"}},
		{name: "both canary and blueGreen", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.BlueGreen = blueGreenRollout().Spec.Strategy.BlueGreen
		}, want: []string{"spec.strategy.blueGreen: Forbidden: must not be set together with canary"}},
		{name: "no steps", mutate: func(r *rolloutsv1beta1.Rollout) { canarySteps(r) },
			want: []string{"spec.strategy.canary.steps: Required value: at least one step is required"}},
		{name: "51 steps", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.Canary.Steps = make([]rolloutsv1beta1.CanaryStep, MaxSteps+1)
		}, want: []string{"spec.strategy.canary.steps: Too many: 51: must have at most 50 items"}},
		{name: "blue-green without steps", base: blueGreenRollout, mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.BlueGreen.Steps = nil
		}, want: []string{"spec.strategy.blueGreen.steps: Required value: at least one step is required"}},
	})
}

func TestValidateRolloutSteps(t *testing.T) {
	const replicasDetail = `must be an integer greater than 0 or a percentage with "0%" < replicas <= "100%"`
	runValidateCases(t, []validateCase{
		{name: "missing replicas", mutate: func(r *rolloutsv1beta1.Rollout) { r.Spec.Strategy.Canary.Steps[1].Replicas = nil },
			want: []string{"spec.strategy.canary.steps[1].replicas: Required value"}},
		{name: "zero replicas", mutate: func(r *rolloutsv1beta1.Rollout) { canarySteps(r, step(intReplicas(0))) },
			want: []string{`spec.strategy.canary.steps[0].replicas: Invalid value: "0": must be greater than 0`}},
		{name: "negative replicas", mutate: func(r *rolloutsv1beta1.Rollout) { canarySteps(r, step(intReplicas(-2))) },
			want: []string{`spec.strategy.canary.steps[0].replicas: Invalid value: "-2": must be greater than 0`}},
		{name: "0%", mutate: func(r *rolloutsv1beta1.Rollout) { canarySteps(r, step(pctReplicas("0%"))) },
			want: []string{`spec.strategy.canary.steps[0].replicas: Invalid value: "0%": ` + replicasDetail}},
		{name: "over 100%", mutate: func(r *rolloutsv1beta1.Rollout) { canarySteps(r, step(pctReplicas("101%"))) },
			want: []string{`spec.strategy.canary.steps[0].replicas: Invalid value: "101%": ` + replicasDetail}},
		{name: "string without %", mutate: func(r *rolloutsv1beta1.Rollout) { canarySteps(r, step(pctReplicas("5"))) },
			want: []string{`spec.strategy.canary.steps[0].replicas: Invalid value: "5": ` + replicasDetail}},
		{name: "decreasing integers", mutate: func(r *rolloutsv1beta1.Rollout) {
			canarySteps(r, step(intReplicas(1)), step(intReplicas(2)), step(intReplicas(1)))
		}, want: []string{`spec.strategy.canary.steps[2].replicas: Invalid value: "1": must not be less than steps[1].replicas`}},
		{name: "decreasing percentages across an integer step are only warned of", mutate: func(r *rolloutsv1beta1.Rollout) {
			canarySteps(r, step(pctReplicas("50%")), step(intReplicas(3)), step(pctReplicas("20%")))
		}, warn: []string{"spec.strategy.canary.steps[2].replicas: 20% is less than steps[0].replicas 50%: the step adds no pods"}},
		{name: "invalid steps are left out of the order", mutate: func(r *rolloutsv1beta1.Rollout) {
			canarySteps(r, step(intReplicas(3)), step(intReplicas(-1)), step(intReplicas(4)))
		}, want: []string{`spec.strategy.canary.steps[1].replicas: Invalid value: "-1": must be greater than 0`}},
	})
}

func TestValidateRolloutTraffic(t *testing.T) {
	withRouting := func(steps ...rolloutsv1beta1.CanaryStep) func(r *rolloutsv1beta1.Rollout) {
		return func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.Canary.TrafficRoutings = []rolloutsv1beta1.TrafficRoutingRef{ingressRouting()}
			canarySteps(r, steps...)
		}
	}
	const canaryDetail = `must be a percentage with "0%" < traffic <= "100%" in a canary release`
	const blueGreenDetail = `must be a percentage with "0%" <= traffic <= "100%" in a blue-green release`
	runValidateCases(t, []validateCase{
		{name: "canary 0%", mutate: withRouting(trafficStep(intReplicas(1), "0%")),
			want: []string{`spec.strategy.canary.steps[0].traffic: Invalid value: "0%": ` + canaryDetail}},
		{name: "canary over 100%", mutate: withRouting(trafficStep(intReplicas(1), "150%")),
			want: []string{`spec.strategy.canary.steps[0].traffic: Invalid value: "150%": ` + canaryDetail}},
		{name: "canary not a percentage", mutate: withRouting(trafficStep(intReplicas(1), "5")),
			want: []string{`spec.strategy.canary.steps[0].traffic: Invalid value: "5": ` + canaryDetail}},
		{name: "blue-green negative", base: blueGreenRollout, mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.BlueGreen.Steps[0].Traffic = ptr.To("-1%")
		}, want: []string{`spec.strategy.blueGreen.steps[0].traffic: Invalid value: "-1%": ` + blueGreenDetail}},
		{name: "partition step over the limit with traffic", mutate: withRouting(trafficStep(pctReplicas("60%"), "20%")),
			want: []string{`spec.strategy.canary.steps[0].replicas: Invalid value: "60%": must not be greater than the partition percent limit 50% ` +
				`in a partition-style release when the step has traffic or matches`}},
		{name: "partition step over the limit with matches", mutate: func(r *rolloutsv1beta1.Rollout) {
			s := step(pctReplicas("60%"))
			s.Matches = []rolloutsv1beta1.HttpRouteMatch{{Headers: []gatewayv1.HTTPHeaderMatch{{Name: "x-canary", Value: "1"}}}}
			withRouting(s)(r)
		}, want: []string{`spec.strategy.canary.steps[0].replicas: Invalid value: "60%": must not be greater than the partition percent limit 50% ` +
			`in a partition-style release when the step has traffic or matches`}},
		{name: "canary on a CloneSet is partition", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "echo"}
			r.Spec.Strategy.Canary.EnableExtraWorkloadForCanary = true
			withRouting(trafficStep(pctReplicas("60%"), "20%"))(r)
		}, want: []string{`spec.strategy.canary.steps[0].replicas: Invalid value: "60%": must not be greater than the partition percent limit 50% ` +
			`in a partition-style release when the step has traffic or matches`}},
		{name: "traffic without trafficRoutings", mutate: func(r *rolloutsv1beta1.Rollout) {
			canarySteps(r, trafficStep(intReplicas(1), "5%"))
		}, warn: []string{"spec.strategy.canary.steps[0].traffic: has no effect without spec.strategy.canary.trafficRoutings"}},
		{name: "matches without trafficRoutings", mutate: func(r *rolloutsv1beta1.Rollout) {
			s := step(intReplicas(1))
			s.Matches = []rolloutsv1beta1.HttpRouteMatch{{Headers: []gatewayv1.HTTPHeaderMatch{{Name: "x-canary", Value: "1"}}}}
			canarySteps(r, s)
		}, warn: []string{"spec.strategy.canary.steps[0].matches: has no effect without spec.strategy.canary.trafficRoutings"}},
	})
}

func TestValidateRolloutTrafficRoutings(t *testing.T) {
	routings := func(trs ...rolloutsv1beta1.TrafficRoutingRef) func(r *rolloutsv1beta1.Rollout) {
		return func(r *rolloutsv1beta1.Rollout) { r.Spec.Strategy.Canary.TrafficRoutings = trs }
	}
	runValidateCases(t, []validateCase{
		{name: "two routings", mutate: routings(ingressRouting(), ingressRouting()),
			want: []string{"spec.strategy.canary.trafficRoutings: Too many: 2: must have at most 1 item"}},
		{name: "no service", mutate: routings(rolloutsv1beta1.TrafficRoutingRef{Ingress: &rolloutsv1beta1.IngressTrafficRouting{Name: "i"}}),
			want: []string{"spec.strategy.canary.trafficRoutings[0].service: Required value"}},
		{name: "no provider", mutate: routings(rolloutsv1beta1.TrafficRoutingRef{Service: "echo"}),
			want: []string{"spec.strategy.canary.trafficRoutings[0]: Required value: one of ingress, gateway or customNetworkRefs is required"},
			warn: []string{"spec.strategy.canary.trafficRoutings[0]: names no ingress, gateway or customNetworkRefs: no traffic is routed"}},
		{name: "an empty customNetworkRefs list is accepted as upstream does",
			mutate: routings(rolloutsv1beta1.TrafficRoutingRef{Service: "echo", CustomNetworkRefs: []rolloutsv1beta1.ObjectRef{}}),
			warn:   []string{"spec.strategy.canary.trafficRoutings[0]: names no ingress, gateway or customNetworkRefs: no traffic is routed"}},
		{name: "ingress without name", mutate: routings(rolloutsv1beta1.TrafficRoutingRef{Service: "echo", Ingress: &rolloutsv1beta1.IngressTrafficRouting{ClassType: "nginx"}}),
			want: []string{"spec.strategy.canary.trafficRoutings[0].ingress.name: Required value"}},
		{name: "gateway without route", mutate: routings(rolloutsv1beta1.TrafficRoutingRef{Service: "echo", Gateway: &rolloutsv1beta1.GatewayTrafficRouting{HTTPRouteName: ptr.To("")}}),
			want: []string{"spec.strategy.canary.trafficRoutings[0].gateway.httpRouteName: Required value"}},
		{name: "negative grace period", mutate: func(r *rolloutsv1beta1.Rollout) {
			tr := ingressRouting()
			tr.GracePeriodSeconds = -1
			routings(tr)(r)
		}, want: []string{"spec.strategy.canary.trafficRoutings[0].gracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0"}},
		{name: "blue-green routing", base: blueGreenRollout, mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.BlueGreen.TrafficRoutings[0].Service = ""
		}, want: []string{"spec.strategy.blueGreen.trafficRoutings[0].service: Required value"}},
	})
}

func TestValidateRolloutAnnotations(t *testing.T) {
	runValidateCases(t, []validateCase{
		{name: "rollback-in-batch yes", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Annotations = map[string]string{rolloutsv1beta1.RollbackInBatchAnnotation: "yes"}
		}, warn: []string{`metadata.annotations[rollouts.kruise.io/rollback-in-batch]: "yes": only "true" turns rolling back in batches on; the Rollout rolls back at once`}},
		{name: "rollback-in-batch empty", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Annotations = map[string]string{rolloutsv1beta1.RollbackInBatchAnnotation: ""}
		}, warn: []string{`metadata.annotations[rollouts.kruise.io/rollback-in-batch]: "": only "true" turns rolling back in batches on; the Rollout rolls back at once`}},
		{name: "failureThreshold that is no number", mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.Canary.FailureThreshold = ptr.To(intstr.FromString("20"))
		}, warn: []string{`spec.strategy.canary.failureThreshold: "20" is neither a number nor a percentage: no failed pod is tolerated`}},
	})
}

func TestValidateRolloutErrorsAccumulate(t *testing.T) {
	r := canaryRollout()
	r.Spec.WorkloadRef.Kind = ""
	canarySteps(r, step(intReplicas(0)), step(nil))
	got := errorStrings(ValidateRollout(r, nil, DefaultOptions()))
	want := []string{
		"spec.workloadRef.kind: Required value",
		`spec.strategy.canary.steps[0].replicas: Invalid value: "0": must be greater than 0`,
		"spec.strategy.canary.steps[1].replicas: Required value",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestValidateConflict(t *testing.T) {
	other := func(name, apiVersion, kind, workload string) rolloutsv1beta1.Rollout {
		o := canaryRollout()
		o.Name = name
		o.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: apiVersion, Kind: kind, Name: workload}
		return *o
	}
	differentNamespace := other("elsewhere", "apps/v1", "Deployment", "echo")
	differentNamespace.Namespace = "other"
	cases := []struct {
		name   string
		others []rolloutsv1beta1.Rollout
		want   []string
	}{
		{name: "no others"},
		{name: "itself", others: []rolloutsv1beta1.Rollout{*canaryRollout()}},
		{name: "other workloads", others: []rolloutsv1beta1.Rollout{
			other("a", "apps/v1", "Deployment", "web"), other("b", "apps/v1", "StatefulSet", "echo"),
			other("c", "apps.kruise.io/v1alpha1", "Deployment", "echo"), differentNamespace,
		}},
		{name: "same workload", others: []rolloutsv1beta1.Rollout{other("first", "apps/v1", "Deployment", "echo")},
			want: []string{`spec.workloadRef: Invalid value: "Deployment/echo": the workload is already released by Rollout first; a workload may have at most one Rollout`}},
		{name: "same workload in another version", others: []rolloutsv1beta1.Rollout{other("first", "apps/v1beta1", "Deployment", "echo")},
			want: []string{`spec.workloadRef: Invalid value: "Deployment/echo": the workload is already released by Rollout first; a workload may have at most one Rollout`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := errorStrings(ValidateConflict(canaryRollout(), tc.others))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			full := errorStrings(ValidateRollout(canaryRollout(), tc.others, DefaultOptions()))
			if diff := cmp.Diff(tc.want, full); diff != "" {
				t.Errorf("ValidateRollout errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateRolloutNil(t *testing.T) {
	if errs := ValidateRollout(nil, nil, DefaultOptions()); len(errs) != 1 {
		t.Errorf("ValidateRollout(nil) = %v, want one error", errs)
	}
	if errs := ValidateConflict(nil, nil); errs != nil {
		t.Errorf("ValidateConflict(nil) = %v, want none", errs)
	}
}
