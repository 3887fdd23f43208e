package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func zoneTerm(zone string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}
}

func TestInject(t *testing.T) {
	zoneA := zoneTerm("a")
	arch := corev1.NodeSelectorRequirement{Key: "arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}
	disk := corev1.NodeSelectorRequirement{Key: "disk", Operator: corev1.NodeSelectorOpExists}
	toleration := corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists}
	preferred := corev1.PreferredSchedulingTerm{Weight: 5, Preference: zoneTerm("a1")}
	subset := &kruiseappsv1alpha1.WorkloadSpreadSubset{Name: "a", RequiredNodeSelectorTerm: &zoneA,
		PreferredNodeSelectorTerms: []corev1.PreferredSchedulingTerm{preferred}, Tolerations: []corev1.Toleration{toleration},
		Patch: runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"spread":"a"}},"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"2"}}}]}}`)}}
	cases := []struct {
		name     string
		required []corev1.NodeSelectorTerm
		want     []corev1.NodeSelectorTerm
		uid      string
		wantAnn  string
	}{
		{name: "no affinity: the subset's term alone", want: []corev1.NodeSelectorTerm{zoneA},
			wantAnn: `{"name":"ws","subset":"a"}`},
		{name: "the term is ANDed into every term", uid: "u-1",
			required: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{arch}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{disk}}},
			want: []corev1.NodeSelectorTerm{{MatchExpressions: append([]corev1.NodeSelectorRequirement{arch}, zoneA.MatchExpressions...)},
				{MatchExpressions: append([]corev1.NodeSelectorRequirement{disk}, zoneA.MatchExpressions...)}},
			wantAnn: `{"name":"ws","subset":"a","uid":"u-1"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "x"}},
				Tolerations: []corev1.Toleration{toleration}}}
			if tc.required != nil {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: tc.required}}}
			}
			if err := Inject(p, spread(), subset, tc.uid); err != nil {
				t.Fatal(err)
			}
			na := p.Spec.Affinity.NodeAffinity
			if diff := cmp.Diff(tc.want, na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms); diff != "" {
				t.Errorf("required terms (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]corev1.PreferredSchedulingTerm{preferred}, na.PreferredDuringSchedulingIgnoredDuringExecution); diff != "" {
				t.Errorf("preferred terms (-want +got):\n%s", diff)
			}
			if len(p.Spec.Tolerations) != 1 {
				t.Errorf("tolerations %v: the one the pod had is repeated", p.Spec.Tolerations)
			}
			if got := p.Annotations[kruiseappsv1alpha1.MatchedWorkloadSpreadSubsetAnnotations]; got != tc.wantAnn {
				t.Errorf("annotation %s, want %s", got, tc.wantAnn)
			}
			if p.Labels["spread"] != "a" || !p.Spec.Containers[0].Resources.Limits.Cpu().Equal(resource.MustParse("2")) ||
				p.Spec.Containers[0].Image != "x" {
				t.Errorf("patch not merged: labels %v, container %+v", p.Labels, p.Spec.Containers[0])
			}
		})
	}
}

func TestInjectRefusesAPatchThatDoesNotApply(t *testing.T) {
	subset := &kruiseappsv1alpha1.WorkloadSpreadSubset{Name: "a", Patch: runtime.RawExtension{Raw: []byte(`{"spec":{"containers":"x"}}`)}}
	if err := Inject(&corev1.Pod{}, spread(), subset, ""); err == nil {
		t.Error("a patch that does not apply is accepted")
	}
}
