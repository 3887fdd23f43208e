package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestValidateRolloutUpdate(t *testing.T) {
	progressing := func(r *rolloutsv1beta1.Rollout) { r.Status.Phase = rolloutsv1beta1.RolloutPhaseProgressing }
	terminating := func(r *rolloutsv1beta1.Rollout) { r.Status.Phase = rolloutsv1beta1.RolloutPhaseTerminating }
	healthy := func(r *rolloutsv1beta1.Rollout) { r.Status.Phase = rolloutsv1beta1.RolloutPhaseHealthy }
	routed := func(r *rolloutsv1beta1.Rollout) {
		r.Spec.Strategy.Canary.TrafficRoutings = []rolloutsv1beta1.TrafficRoutingRef{ingressRouting()}
	}
	cases := []struct {
		name   string
		old    func(r *rolloutsv1beta1.Rollout)
		mutate func(r *rolloutsv1beta1.Rollout)
		want   []string
	}{
		{name: "pause while progressing", old: progressing, mutate: func(r *rolloutsv1beta1.Rollout) { r.Spec.Strategy.Paused = true }},
		{name: "step edits while progressing", old: progressing, mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.Canary.Steps[1].Replicas = pctReplicas("60%")
		}},
		{name: "workload change while healthy", old: healthy, mutate: func(r *rolloutsv1beta1.Rollout) { r.Spec.WorkloadRef.Name = "web" }},
		{name: "workload version change while progressing", old: progressing, mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.WorkloadRef.APIVersion = "apps/v1beta1"
		}},
		{name: "workload change while progressing", old: progressing, mutate: func(r *rolloutsv1beta1.Rollout) { r.Spec.WorkloadRef.Name = "web" },
			want: []string{"spec.workloadRef: Forbidden: is immutable while the Rollout is Progressing"}},
		{name: "routing change while terminating", old: func(r *rolloutsv1beta1.Rollout) { terminating(r); routed(r) },
			mutate: func(r *rolloutsv1beta1.Rollout) {
				routed(r)
				r.Spec.Strategy.Canary.TrafficRoutings[0].Ingress.Name = "other"
			},
			want: []string{"spec.strategy.canary.trafficRoutings: Forbidden: is immutable while the Rollout is Terminating"}},
		{name: "style change while progressing", old: progressing, mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.Canary.EnableExtraWorkloadForCanary = true
		}, want: []string{"spec.strategy.canary.enableExtraWorkloadForCanary: Forbidden: the rolling style is immutable while the Rollout is Progressing"}},
		{name: "switch to blue-green while progressing", old: progressing, mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy = rolloutsv1beta1.RolloutStrategy{BlueGreen: &rolloutsv1beta1.BlueGreenStrategy{
				Steps: r.Spec.Strategy.Canary.Steps,
			}}
		}, want: []string{"spec.strategy: Forbidden: the rolling style is immutable while the Rollout is Progressing"}},
		{name: "step added while progressing", old: progressing, mutate: func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.Canary.Steps = append(r.Spec.Strategy.Canary.Steps, step(pctReplicas("100%")))
		}, want: []string{"spec.strategy.canary.steps: Forbidden: the number of steps is immutable while the Rollout is Progressing"}},
		{name: "errors the stored object has do not block", old: func(r *rolloutsv1beta1.Rollout) {
			canarySteps(r, trafficStep(intReplicas(1), "5%"))
		}, mutate: func(r *rolloutsv1beta1.Rollout) {
			canarySteps(r, trafficStep(intReplicas(1), "5%"))
			r.Finalizers = []string{rolloutsv1beta1.RolloutFinalizer}
		}},
		{name: "new errors block", old: func(r *rolloutsv1beta1.Rollout) {
			canarySteps(r, trafficStep(intReplicas(1), "5%"))
		}, mutate: func(r *rolloutsv1beta1.Rollout) {
			canarySteps(r, trafficStep(intReplicas(1), "5%"), step(intReplicas(0)))
		}, want: []string{`spec.strategy.canary.steps[1].replicas: Invalid value: "0": must be greater than 0`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := canaryRollout(), canaryRollout()
			tc.old(old)
			cur.Status = old.Status
			tc.mutate(cur)
			got := errorStrings(ValidateRolloutUpdate(old, cur, nil, DefaultOptions()))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateRolloutUpdateWithoutOld(t *testing.T) {
	r := canaryRollout()
	r.Spec.WorkloadRef.Kind = ""
	got := errorStrings(ValidateRolloutUpdate(nil, r, nil, DefaultOptions()))
	if diff := cmp.Diff([]string{"spec.workloadRef.kind: Required value"}, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if errs := ValidateRolloutUpdate(canaryRollout(), nil, nil, DefaultOptions()); len(errs) != 1 {
		t.Errorf("ValidateRolloutUpdate(old, nil) = %v, want one error", errs)
	}
}

func TestValidateV1alpha1RolloutUpdate(t *testing.T) {
	progressing := func(r *rolloutsv1alpha1.Rollout) { r.Status.Phase = rolloutsv1alpha1.RolloutPhaseProgressing }
	cases := []struct {
		name   string
		old    func(r *rolloutsv1alpha1.Rollout)
		mutate func(r *rolloutsv1alpha1.Rollout)
		want   []string
	}{
		{name: "weight edit while progressing", old: progressing, mutate: func(r *rolloutsv1alpha1.Rollout) {
			r.Spec.Strategy.Canary.Steps[0].Weight = ptr.To[int32](30)
		}},
		{name: "same style in another case", old: func(r *rolloutsv1alpha1.Rollout) { progressing(r); setStyle(r, "canary") },
			mutate: func(r *rolloutsv1alpha1.Rollout) { setStyle(r, "Canary") }},
		{name: "style change while progressing", old: progressing, mutate: func(r *rolloutsv1alpha1.Rollout) {
			setStyle(r, "partition")
			alphaSteps(r, weightStep(10), weightStep(20), weightStep(30))
		}, want: []string{"metadata.annotations[rollouts.kruise.io/rolling-style]: Forbidden: the rolling style is immutable while the Rollout is Progressing"}},
		{name: "workload change while progressing", old: progressing, mutate: func(r *rolloutsv1alpha1.Rollout) {
			r.Spec.ObjectRef.WorkloadRef.Name = "web"
		}, want: []string{"spec.objectRef.workloadRef: Forbidden: is immutable while the Rollout is Progressing"}},
		{name: "routing added while progressing", old: progressing, mutate: withAlphaRouting,
			want: []string{"spec.strategy.canary.trafficRoutings: Forbidden: is immutable while the Rollout is Progressing"}},
		{name: "step removed while progressing is upstream's", old: progressing, mutate: func(r *rolloutsv1alpha1.Rollout) {
			alphaSteps(r, weightStep(50), weightStep(100))
		}},
		{name: "invalid update", old: progressing, mutate: func(r *rolloutsv1alpha1.Rollout) { setStyle(r, "bluegreen") },
			want: []string{`metadata.annotations[rollouts.kruise.io/rolling-style]: Unsupported value: "bluegreen": supported values: "canary", "partition"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := alphaRollout(), alphaRollout()
			tc.old(old)
			cur.Status = old.Status
			tc.mutate(cur)
			got := errorStrings(ValidateV1alpha1RolloutUpdate(old, cur, nil, DefaultOptions()))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
