package admission

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func valid() *kruiseappsv1alpha1.WorkloadSpread {
	two := intstr.FromInt32(2)
	return &kruiseappsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Name: "ws"},
		Spec: kruiseappsv1alpha1.WorkloadSpreadSpec{
			TargetReference: &kruiseappsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "app"},
			Subsets: []kruiseappsv1alpha1.WorkloadSpreadSubset{
				{Name: "a", MaxReplicas: &two, RequiredNodeSelectorTerm: &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
					Patch: runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"x":"y"}}}`)}},
				{Name: "b"},
			}}}
}

func TestValidate(t *testing.T) {
	pct := intstr.FromString("150%")
	neg := intstr.FromInt32(-1)
	minus := int32(-5)
	cases := []struct {
		name   string
		change func(ws *kruiseappsv1alpha1.WorkloadSpread)
		others []kruiseappsv1alpha1.WorkloadSpread
		want   string // substring of the error; "" for none
	}{
		{name: "valid", change: func(*kruiseappsv1alpha1.WorkloadSpread) {}},
		{name: "every supported kind", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) {
			ws.Spec.TargetReference.APIVersion, ws.Spec.TargetReference.Kind = "batch/v1", "Job"
		}},
		{name: "unsupported kind", want: "spec.targetRef: Unsupported value", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) {
			ws.Spec.TargetReference.Kind = "DaemonSet"
		}},
		{name: "no target", want: "spec.targetRef: Required", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) { ws.Spec.TargetReference = nil }},
		{name: "no subsets", want: "spec.subsets: Required", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) { ws.Spec.Subsets = nil }},
		{name: "duplicate subset", want: "spec.subsets[1].name: Duplicate value", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) {
			ws.Spec.Subsets[1].Name = "a"
		}},
		{name: "percent above 100", want: "spec.subsets[0].maxReplicas", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) {
			ws.Spec.Subsets[0].MaxReplicas = &pct
		}},
		{name: "negative max", want: "spec.subsets[0].maxReplicas", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) {
			ws.Spec.Subsets[0].MaxReplicas = &neg
		}},
		{name: "bad required term", want: "spec.subsets[0].requiredNodeSelectorTerm", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) {
			ws.Spec.Subsets[0].RequiredNodeSelectorTerm.MatchExpressions[0].Operator = "Near"
		}},
		{name: "patch not an object", want: "spec.subsets[0].patch: Invalid value", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) {
			ws.Spec.Subsets[0].Patch.Raw = []byte(`[1]`)
		}},
		{name: "patch that does not merge", want: "spec.subsets[0].patch: Invalid value", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) {
			ws.Spec.Subsets[0].Patch.Raw = []byte(`{"spec":{"containers":[{"name":{}}]}}`)
		}},
		{name: "bad toleration", want: "spec.subsets[1].tolerations[0].value", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) {
			ws.Spec.Subsets[1].Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}
		}},
		{name: "unknown strategy", want: "spec.scheduleStrategy.type: Unsupported value", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) {
			ws.Spec.ScheduleStrategy.Type = "Random"
		}},
		{name: "negative critical seconds", want: "rescheduleCriticalSeconds", change: func(ws *kruiseappsv1alpha1.WorkloadSpread) {
			ws.Spec.ScheduleStrategy = kruiseappsv1alpha1.WorkloadSpreadScheduleStrategy{Type: kruiseappsv1alpha1.AdaptiveWorkloadSpreadScheduleStrategyType,
				Adaptive: &kruiseappsv1alpha1.AdaptiveWorkloadSpreadStrategy{RescheduleCriticalSeconds: &minus}}
		}},
		{name: "target claimed by another", want: "spread by WorkloadSpread other", others: []kruiseappsv1alpha1.WorkloadSpread{*named("other")},
			change: func(*kruiseappsv1alpha1.WorkloadSpread) {}},
		{name: "itself is no conflict", others: []kruiseappsv1alpha1.WorkloadSpread{*named("ws")}, change: func(*kruiseappsv1alpha1.WorkloadSpread) {}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := valid()
			tc.change(ws)
			errs := Validate(ws, tc.others)
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("refused: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("errors %v, want one with %q", got, tc.want)
			}
		})
	}
}

func named(name string) *kruiseappsv1alpha1.WorkloadSpread {
	ws := valid()
	ws.Name = name
	return ws
}

// Any WorkloadSpread read from JSON is judged without panicking, against itself as another claimant too.
func FuzzValidate(f *testing.F) {
	seed, _ := json.Marshal(valid())
	f.Add(seed)
	f.Fuzz(func(t *testing.T, raw []byte) {
		ws := &kruiseappsv1alpha1.WorkloadSpread{}
		if json.Unmarshal(raw, ws) != nil {
			return
		}
		other := ws.DeepCopy()
		other.Name += "-other"
		_ = Validate(ws, []kruiseappsv1alpha1.WorkloadSpread{*other})
	})
}

func TestWarnings(t *testing.T) {
	ws := valid()
	if w := Warnings(ws); len(w) != 0 {
		t.Errorf("warnings without a targetFilter: %v", w)
	}
	ws.Spec.TargetFilter = &kruiseappsv1alpha1.TargetFilter{ReplicasPathList: []string{"spec.replicas"}}
	if w := Warnings(ws); len(w) != 1 || !strings.Contains(w[0], "spec.targetFilter") {
		t.Errorf("warnings with a targetFilter: %v", w)
	}
}
