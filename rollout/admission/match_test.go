package admission

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestMatchingRollout(t *testing.T) {
	named := func(name string, change func(r *rolloutsv1beta1.Rollout)) rolloutsv1beta1.Rollout {
		r := canaryRollout()
		r.Name = name
		if change != nil {
			change(r)
		}
		return *r
	}
	deploymentGK := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	cases := []struct {
		name     string
		rollouts []rolloutsv1beta1.Rollout
		want     string // "" expects no match
	}{
		{name: "match", rollouts: []rolloutsv1beta1.Rollout{named("demo", nil)}, want: "demo"},
		{name: "another version of the group", rollouts: []rolloutsv1beta1.Rollout{named("demo", func(r *rolloutsv1beta1.Rollout) {
			r.Spec.WorkloadRef.APIVersion = "apps/v1beta2"
		})}, want: "demo"},
		{name: "other namespace", rollouts: []rolloutsv1beta1.Rollout{named("demo", func(r *rolloutsv1beta1.Rollout) { r.Namespace = "other" })}},
		{name: "deleting", rollouts: []rolloutsv1beta1.Rollout{named("demo", func(r *rolloutsv1beta1.Rollout) {
			r.DeletionTimestamp = ptr.To(metav1.Now())
		})}},
		{name: "disabled", rollouts: []rolloutsv1beta1.Rollout{named("demo", func(r *rolloutsv1beta1.Rollout) {
			r.Status.Phase = rolloutsv1beta1.RolloutPhaseDisabled
		})}},
		{name: "disabling still matches", rollouts: []rolloutsv1beta1.Rollout{named("demo", func(r *rolloutsv1beta1.Rollout) {
			r.Status.Phase = rolloutsv1beta1.RolloutPhaseDisabling
		})}, want: "demo"},
		{name: "empty strategy", rollouts: []rolloutsv1beta1.Rollout{named("demo", func(r *rolloutsv1beta1.Rollout) {
			r.Spec.Strategy.Canary = nil
		})}},
		{name: "other group", rollouts: []rolloutsv1beta1.Rollout{named("demo", func(r *rolloutsv1beta1.Rollout) {
			r.Spec.WorkloadRef.APIVersion = "apps.kruise.io/v1alpha1"
		})}},
		{name: "other name", rollouts: []rolloutsv1beta1.Rollout{named("demo", func(r *rolloutsv1beta1.Rollout) {
			r.Spec.WorkloadRef.Name = "web"
		})}},
		{name: "malformed apiVersion", rollouts: []rolloutsv1beta1.Rollout{named("demo", func(r *rolloutsv1beta1.Rollout) {
			r.Spec.WorkloadRef.APIVersion = "a/b/c"
		})}},
		{name: "smallest name wins", rollouts: []rolloutsv1beta1.Rollout{named("zeta", nil), named("alpha", nil), named("mid", nil)}, want: "alpha"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := MatchingRollout(tc.rollouts, "ns", deploymentGK, "echo")
			switch {
			case got == nil && tc.want != "":
				t.Errorf("no match, want %s", tc.want)
			case got != nil && got.Name != tc.want:
				t.Errorf("matched %s, want %q", got.Name, tc.want)
			}
		})
	}
	if Matches(nil, "ns", deploymentGK, "echo") {
		t.Error("Matches(nil) = true")
	}
}
