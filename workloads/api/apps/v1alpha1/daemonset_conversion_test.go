package v1alpha1

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

func toV1beta1(t *testing.T, in *DaemonSet) *kruiseappsv1beta1.DaemonSet {
	t.Helper()
	out := &kruiseappsv1beta1.DaemonSet{}
	if err := ConvertDaemonSetToV1beta1(in, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func fromV1beta1(t *testing.T, in *kruiseappsv1beta1.DaemonSet) *DaemonSet {
	t.Helper()
	out := &DaemonSet{}
	if err := ConvertDaemonSetFromV1beta1(in, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func progressive(value string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "ds", Annotations: map[string]string{ProgressiveCreatePodAnnotation: value, "team": "a"}}
}

// The annotation and the scale strategy are one setting: each version shows it in its own form only.
func TestDaemonSetPartitionedScalingConversion(t *testing.T) {
	for _, tc := range []struct {
		name       string
		meta       metav1.ObjectMeta
		wantScale  *kruiseappsv1beta1.DaemonSetScaleStrategy
		annotation *string // what the v1beta1 form keeps of the annotation
	}{
		{"absent", metav1.ObjectMeta{Name: "ds"}, nil, nil},
		{"true", progressive("true"), &kruiseappsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}, nil},
		{"false", progressive("false"), &kruiseappsv1beta1.DaemonSetScaleStrategy{}, nil},
		{"not a boolean: kept as written, off", progressive("yes"), nil, ptr.To("yes")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := toV1beta1(t, &DaemonSet{ObjectMeta: tc.meta})
			if !jsonEqual(out.Spec.ScaleStrategy, tc.wantScale) {
				t.Errorf("scaleStrategy %+v, want %+v", out.Spec.ScaleStrategy, tc.wantScale)
			}
			got, ok := out.Annotations[ProgressiveCreatePodAnnotation]
			if ok != (tc.annotation != nil) || (ok && got != *tc.annotation) {
				t.Errorf("v1beta1 annotation %q (present %v), want %v", got, ok, tc.annotation)
			}
			if tc.meta.Annotations != nil && out.Annotations["team"] != "a" {
				t.Errorf("other annotations lost: %v", out.Annotations)
			}
		})
	}
}

// A v1beta1 client's scale strategy wins over an annotation it also wrote, in both directions.
func TestDaemonSetScaleStrategyWinsFromV1beta1(t *testing.T) {
	for _, tc := range []struct {
		name  string
		meta  metav1.ObjectMeta
		scale *kruiseappsv1beta1.DaemonSetScaleStrategy
		want  string // the stored annotation; "" for none
	}{
		{"field on", metav1.ObjectMeta{}, &kruiseappsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: true}, "true"},
		{"field off over an annotation on", progressive("true"), &kruiseappsv1beta1.DaemonSetScaleStrategy{}, "false"},
		{"no field clears an annotation on", progressive("true"), nil, ""},
		{"no field keeps a value that is not a boolean", progressive("yes"), nil, "yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &kruiseappsv1beta1.DaemonSet{ObjectMeta: tc.meta}
			in.Spec.ScaleStrategy = tc.scale
			if got := fromV1beta1(t, in).Annotations[ProgressiveCreatePodAnnotation]; got != tc.want {
				t.Errorf("annotation %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDaemonSetStatusAndStrategyConversion(t *testing.T) {
	in := &DaemonSet{}
	in.Spec.UpdateStrategy = DaemonSetUpdateStrategy{Type: RollingUpdateDaemonSetStrategyType, RollingUpdate: &RollingUpdateDaemonSet{
		Type: DeprecatedSurgingRollingUpdateType, Partition: ptr.To(intstr.FromString("50%")), Paused: ptr.To(true),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}},
	}}
	in.Status = DaemonSetStatus{DesiredNumberScheduled: 6, UpdatedNumberScheduled: 2, DaemonSetHash: "5d8f"}
	out := toV1beta1(t, in)
	if out.Status.UpdateRevision != "5d8f" || out.Status.DesiredNumberScheduled != 6 || out.Status.UpdatedNumberScheduled != 2 {
		t.Errorf("status %+v", out.Status)
	}
	ru := out.Spec.UpdateStrategy.RollingUpdate
	if ru.Type != kruiseappsv1beta1.DeprecatedSurgingRollingUpdateType || ru.Partition.StrVal != "50%" || !*ru.Paused ||
		ru.Selector.MatchLabels["canary"] != "true" {
		t.Errorf("rollingUpdate %+v", ru)
	}
	if back := fromV1beta1(t, out); back.Status.DaemonSetHash != "5d8f" || !jsonEqual(back, in) {
		t.Errorf("round trip changed the object:\n%s\n%s", mustJSON(back), mustJSON(in))
	}
}

// Any stored object reads back unchanged through v1beta1, and any v1beta1 object whose annotations do not
// also spell the setting reads back unchanged through storage.
func TestDaemonSetRandomizedRoundTrip(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		f := daemonSetFiller(randfill.NewWithSeed(seed))
		stored := &DaemonSet{}
		f.Fill(stored)
		stored.TypeMeta = metav1.TypeMeta{} // the converter's caller sets it
		if back := fromV1beta1(t, toV1beta1(t, stored)); !jsonEqual(back, stored) {
			t.Fatalf("seed %d: v1alpha1 round trip\n got %s\nwant %s", seed, mustJSON(back), mustJSON(stored))
		}
		served := &kruiseappsv1beta1.DaemonSet{}
		f.Fill(served)
		served.TypeMeta = metav1.TypeMeta{}
		if spellsTheSetting(served) {
			continue
		}
		if back := toV1beta1(t, fromV1beta1(t, served)); !jsonEqual(back, served) {
			t.Fatalf("seed %d: v1beta1 round trip\n got %s\nwant %s", seed, mustJSON(back), mustJSON(served))
		}
	}
}

// spellsTheSetting: a v1beta1 object that also carries the annotation as a boolean, or carries it beside a
// scale strategy, loses the annotation on the way through storage (the scale strategy is the setting).
func spellsTheSetting(ds *kruiseappsv1beta1.DaemonSet) bool {
	value, ok := ds.Annotations[ProgressiveCreatePodAnnotation]
	return ok && (value == "true" || value == "false" || ds.Spec.ScaleStrategy != nil)
}

func daemonSetFiller(f *randfill.Filler) *randfill.Filler {
	return f.NilChance(0.3).NumElements(0, 3).Funcs(
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			m.Name = c.String(8)
			if c.Bool() {
				m.Annotations = map[string]string{c.String(4): c.String(4)}
				if c.Bool() {
					m.Annotations[ProgressiveCreatePodAnnotation] = []string{"true", "false", "yes", ""}[c.Intn(4)]
				}
			}
		},
		func(p *corev1.PodTemplateSpec, c randfill.Continue) {
			p.Labels = map[string]string{"app": c.String(5)}
			p.Spec.Containers = []corev1.Container{{Name: "main", Image: c.String(6)}}
		},
		func(s *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*s = intstr.FromInt32(c.Int31n(100))
			} else {
				*s = intstr.FromString("30%")
			}
		},
		func(t *metav1.Time, c randfill.Continue) { *t = metav1.Unix(c.Int63n(1<<31), 0) },
	)
}

func jsonEqual(a, b any) bool { return mustJSON(a) == mustJSON(b) }

func mustJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(raw)
}
