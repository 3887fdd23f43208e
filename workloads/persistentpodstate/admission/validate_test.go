package admission

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func sample() *kruiseappsv1alpha1.PersistentPodState {
	p := &kruiseappsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	p.Spec.TargetReference = kruiseappsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"}
	p.Spec.RequiredPersistentTopology = &kruiseappsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"topology.kubernetes.io/zone"}}
	return p
}

func TestValidate(t *testing.T) {
	other := sample()
	other.Name = "other"
	other.Spec.TargetReference.APIVersion = "apps/v1"
	other.Spec.TargetReference.Name = "db"
	tests := []struct {
		name   string
		mutate func(p *kruiseappsv1alpha1.PersistentPodState)
		old    func(p *kruiseappsv1alpha1.PersistentPodState)
		others []kruiseappsv1alpha1.PersistentPodState
		want   string // "" accepts
	}{
		{name: "the sample", others: []kruiseappsv1alpha1.PersistentPodState{*other}},
		{name: "an Advanced StatefulSet, preferred only", mutate: func(p *kruiseappsv1alpha1.PersistentPodState) {
			p.Spec.TargetReference.APIVersion = "apps.kruise.io/v1beta1"
			p.Spec.RequiredPersistentTopology = nil
			p.Spec.PreferredPersistentTopology = []kruiseappsv1alpha1.PreferredTopologyTerm{{Weight: 100}}
		}},
		{name: "no target name", mutate: func(p *kruiseappsv1alpha1.PersistentPodState) { p.Spec.TargetReference.Name = "" },
			want: "spec.targetRef: Required value: apiVersion, kind and name are required"},
		{name: "a Deployment", mutate: func(p *kruiseappsv1alpha1.PersistentPodState) { p.Spec.TargetReference.Kind = "Deployment" },
			want: `spec.targetRef: Unsupported value: "apps/v1 Deployment"`},
		{name: "a bad apiVersion", mutate: func(p *kruiseappsv1alpha1.PersistentPodState) { p.Spec.TargetReference.APIVersion = "a/b/c" },
			want: `spec.targetRef.apiVersion: Invalid value: "a/b/c"`},
		{name: "no topology", mutate: func(p *kruiseappsv1alpha1.PersistentPodState) { p.Spec.RequiredPersistentTopology = nil },
			want: "spec: Required value: requiredPersistentTopology and preferredPersistentTopology cannot both be empty"},
		{name: "a weight of 0", mutate: func(p *kruiseappsv1alpha1.PersistentPodState) {
			p.Spec.PreferredPersistentTopology = []kruiseappsv1alpha1.PreferredTopologyTerm{{Weight: 100}, {Weight: 0}}
		}, want: "spec.preferredPersistentTopology[1].weight: Invalid value: 0: must be in the range 1-100"},
		{name: "a changed target", old: func(p *kruiseappsv1alpha1.PersistentPodState) { p.Spec.TargetReference.Name = "before" },
			want: "spec.targetRef: Forbidden: targetRef cannot be modified"},
		{name: "another PersistentPodState of the same StatefulSet, by another version",
			others: []kruiseappsv1alpha1.PersistentPodState{func() kruiseappsv1alpha1.PersistentPodState {
				o := *other.DeepCopy()
				o.Spec.TargetReference = kruiseappsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "StatefulSet", Name: "web"}
				return o
			}()}, mutate: func(p *kruiseappsv1alpha1.PersistentPodState) {
				p.Spec.TargetReference.APIVersion = "apps.kruise.io/v1beta1"
			},
			want: "targetRef is in conflict with other PersistentPodState other"},
		{name: "itself is no conflict", others: []kruiseappsv1alpha1.PersistentPodState{*sample()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := sample()
			if tc.mutate != nil {
				tc.mutate(p)
			}
			var old *kruiseappsv1alpha1.PersistentPodState
			if tc.old != nil {
				old = p.DeepCopy()
				tc.old(old)
			}
			errs := Validate(p, old, tc.others)
			got := ""
			if len(errs) > 0 {
				got = errs.ToAggregate().Error()
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
