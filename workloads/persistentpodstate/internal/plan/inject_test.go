package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestInject(t *testing.T) {
	recorded := pps(map[string]kruiseappsv1alpha1.PodState{"web-0": state("node-a", "z1", ""), "web-2": state("node-c", "", ""),
		"web-3": {NodeName: "node-d"}})
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"a": "b"}},
			Spec: corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}}
	}
	prefer := func(key, value string) corev1.PreferredSchedulingTerm {
		return corev1.PreferredSchedulingTerm{Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}}}}
	}

	got := pod("web-0")
	if !Inject(got, recorded) {
		t.Fatal("a recorded pod was not changed")
	}
	want := pod("web-0")
	want.Annotations[kruiseappsv1alpha1.InjectedPersistentPodStateKey] = "web"
	want.Spec.NodeSelector[zone] = "z1"
	want.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{prefer(hostname, "node-a")}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod (-want +got):\n%s", diff)
	}
	if Inject(got, recorded) {
		t.Error("a pod injected already was changed again")
	}

	// web-2's node has no zone: only the preference.
	got = pod("web-2")
	if !Inject(got, recorded) || got.Spec.NodeSelector[zone] != "" || len(got.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("web-2: %+v", got.Spec)
	}
	for _, name := range []string{"web-1", "web-3"} { // no record; a record without node labels
		got := pod(name)
		if Inject(got, recorded) || !cmp.Equal(pod(name), got) {
			t.Errorf("%s changed: %+v", name, got)
		}
	}
}
