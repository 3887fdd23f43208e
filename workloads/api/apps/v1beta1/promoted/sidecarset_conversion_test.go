package promoted

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const customVersionLabel = kruiseappsv1alpha1.SidecarSetCustomVersionLabel

func fromV1alpha1(t *testing.T, in *kruiseappsv1alpha1.SidecarSet) *SidecarSet {
	t.Helper()
	out := &SidecarSet{}
	if err := ConvertSidecarSetFromV1alpha1(in, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func toV1alpha1(t *testing.T, in *SidecarSet) *kruiseappsv1alpha1.SidecarSet {
	t.Helper()
	out := &kruiseappsv1alpha1.SidecarSet{}
	if err := ConvertSidecarSetToV1alpha1(in, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func selectorOf(labels map[string]string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: labels}
}

// v1alpha1's namespace is v1beta1's selector of that namespace's name label, and only that selector comes back
// as a namespace.
func TestSidecarSetNamespaceConversion(t *testing.T) {
	byName := selectorOf(map[string]string{corev1.LabelMetadataName: "team-a"})
	for _, tc := range []struct {
		name         string
		namespace    string
		selector     *metav1.LabelSelector
		wantSelector *metav1.LabelSelector // in v1beta1
		back         string                // the namespace of the stored form after a v1beta1 round trip
	}{
		{"namespace", "team-a", nil, byName, "team-a"},
		{"neither", "", nil, nil, ""},
		{"another selector", "", selectorOf(map[string]string{"env": "prod"}), selectorOf(map[string]string{"env": "prod"}), ""},
		{"the name label and another", "", selectorOf(map[string]string{corev1.LabelMetadataName: "a", "env": "prod"}),
			selectorOf(map[string]string{corev1.LabelMetadataName: "a", "env": "prod"}), ""},
		{"the name label alone: the same set as a namespace", "", byName, byName, "team-a"},
		{"both (refused by validation): namespace wins, as upstream", "team-a", selectorOf(map[string]string{"env": "prod"}), byName, "team-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &kruiseappsv1alpha1.SidecarSet{}
			in.Spec.Namespace, in.Spec.NamespaceSelector = tc.namespace, tc.selector
			served := fromV1alpha1(t, in)
			if !jsonEqual(served.Spec.NamespaceSelector, tc.wantSelector) {
				t.Errorf("v1beta1 namespaceSelector %s, want %s", mustJSON(served.Spec.NamespaceSelector), mustJSON(tc.wantSelector))
			}
			stored := toV1alpha1(t, served)
			if stored.Spec.Namespace != tc.back || (tc.back != "" && stored.Spec.NamespaceSelector != nil) {
				t.Errorf("stored again as namespace %q, selector %s", stored.Spec.Namespace, mustJSON(stored.Spec.NamespaceSelector))
			}
		})
	}
}

// A selector of an empty name selects no namespace, an empty namespace every one: it stays a selector.
func TestSidecarSetSelectorOfNoNameStaysASelector(t *testing.T) {
	in := &SidecarSet{}
	in.Spec.NamespaceSelector = selectorOf(map[string]string{corev1.LabelMetadataName: ""})
	if out := toV1alpha1(t, in); out.Spec.Namespace != "" || !jsonEqual(out.Spec.NamespaceSelector, in.Spec.NamespaceSelector) {
		t.Errorf("stored as namespace %q, selector %s", out.Spec.Namespace, mustJSON(out.Spec.NamespaceSelector))
	}
}

// The custom version is a label in v1alpha1 and a field in v1beta1: each version shows it in its own form only.
func TestSidecarSetCustomVersionConversion(t *testing.T) {
	in := &kruiseappsv1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{customVersionLabel: "v2", "team": "a"}}}
	served := fromV1alpha1(t, in)
	if served.Spec.CustomVersion != "v2" || served.Labels[customVersionLabel] != "" || served.Labels["team"] != "a" {
		t.Errorf("v1beta1 customVersion %q, labels %v", served.Spec.CustomVersion, served.Labels)
	}
	if in.Labels[customVersionLabel] != "v2" {
		t.Error("the conversion changed its input's labels")
	}
	served.Spec.CustomVersion = "v3"
	if stored := toV1alpha1(t, served); stored.Labels[customVersionLabel] != "v3" || stored.Labels["team"] != "a" {
		t.Errorf("stored labels %v", stored.Labels)
	}
	served.Spec.CustomVersion = ""
	if stored := toV1alpha1(t, served); stored.Labels[customVersionLabel] != "" || stored.Labels["team"] != "a" {
		t.Errorf("a v1beta1 client clearing customVersion left labels %v", stored.Labels)
	}
	withoutLabels := &SidecarSet{Spec: SidecarSetSpec{CustomVersion: "v1"}}
	if stored := toV1alpha1(t, withoutLabels); stored.Labels[customVersionLabel] != "v1" {
		t.Errorf("stored labels %v", stored.Labels)
	}
}

// Any stored object reads back unchanged through v1beta1 unless its selector is the name label alone (which
// comes back as namespace), and any v1beta1 object that does not also carry the label reads back unchanged
// through storage.
func TestSidecarSetRandomizedRoundTrip(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		f := sidecarSetFiller(randfill.NewWithSeed(seed))
		stored := &kruiseappsv1alpha1.SidecarSet{}
		f.Fill(stored)
		stored.TypeMeta = metav1.TypeMeta{}
		if stored.Spec.Namespace != "" {
			stored.Spec.NamespaceSelector = nil // validation refuses both
		}
		if back := toV1alpha1(t, fromV1alpha1(t, stored)); selectedNamespace(stored.Spec.NamespaceSelector) == "" && !jsonEqual(back, stored) {
			t.Fatalf("seed %d: v1alpha1 round trip\n got %s\nwant %s", seed, mustJSON(back), mustJSON(stored))
		}
		served := &SidecarSet{}
		f.Fill(served)
		served.TypeMeta = metav1.TypeMeta{}
		if _, ok := served.Labels[customVersionLabel]; ok {
			continue
		}
		if back := fromV1alpha1(t, toV1alpha1(t, served)); !jsonEqual(back, served) {
			t.Fatalf("seed %d: v1beta1 round trip\n got %s\nwant %s", seed, mustJSON(back), mustJSON(served))
		}
	}
}

func sidecarSetFiller(f *randfill.Filler) *randfill.Filler {
	return f.NilChance(0.3).NumElements(0, 2).Funcs(
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			m.Name = c.String(8)
			if c.Bool() {
				m.Labels = map[string]string{c.String(4): c.String(4)}
				if c.Bool() {
					m.Labels[customVersionLabel] = []string{"v2", ""}[c.Intn(2)]
				}
			}
		},
		func(s *metav1.LabelSelector, c randfill.Continue) {
			key := []string{corev1.LabelMetadataName, "env"}[c.Intn(2)]
			*s = metav1.LabelSelector{MatchLabels: map[string]string{key: []string{"team-a", "prod"}[c.Intn(2)]}}
		},
		func(ns *string, c randfill.Continue) { *ns = c.String(6) },
		func(v *corev1.Volume, c randfill.Continue) { v.Name = c.String(5) },
		func(ct *corev1.Container, c randfill.Continue) { ct.Name, ct.Image = c.String(5), c.String(6) },
		func(s *intstr.IntOrString, c randfill.Continue) { *s = intstr.FromInt32(c.Int31n(10)) },
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
