package controller

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
)

func TestStateOps(t *testing.T) {
	now := time.Date(2026, 12, 3, 1, 2, 3, 0, time.UTC)
	pod := func(state string, annotations map[string]string) *corev1.Pod {
		labels := map[string]string{"app": "a"}
		if state != "" {
			labels[kruiseappspub.LifecycleStateKey] = state
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}}
	}
	cases := []struct {
		name string
		old  *corev1.Pod
		to   kruiseappspub.LifecycleStateType
		want string
	}{
		{name: "tests the state, keeps other annotations", old: pod("PreparingNormal", map[string]string{"x": "y"}), to: kruiseappspub.LifecycleStateNormal,
			want: `[{"op":"test","path":"/metadata/labels/lifecycle.apps.kruise.io~1state","value":"PreparingNormal"},` +
				`{"op":"replace","path":"/metadata/labels/lifecycle.apps.kruise.io~1state","value":"Normal"},` +
				`{"op":"add","path":"/metadata/annotations/lifecycle.apps.kruise.io~1timestamp","value":"2026-12-03T01:02:03Z"}]`},
		{name: "adds the annotations map when there is none", old: pod("PreparingNormal", nil), to: kruiseappspub.LifecycleStateNormal,
			want: `[{"op":"test","path":"/metadata/labels/lifecycle.apps.kruise.io~1state","value":"PreparingNormal"},` +
				`{"op":"replace","path":"/metadata/labels/lifecycle.apps.kruise.io~1state","value":"Normal"},` +
				`{"op":"add","path":"/metadata/annotations","value":{"lifecycle.apps.kruise.io/timestamp":"2026-12-03T01:02:03Z"}}]`},
		{name: "no state to test", old: pod("", nil), to: kruiseappspub.LifecycleStateNormal, want: "null"},
		{name: "removing the state", old: pod("Normal", nil), to: "", want: "null"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next := c.old.DeepCopy()
			lifecycle.SetState(next, c.to, now)
			got, err := json.Marshal(stateOps(c.old, next))
			if err != nil || string(got) != c.want {
				t.Fatalf("stateOps = %s, %v\nwant %s", got, err, c.want)
			}
		})
	}
}

func TestConditionOps(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 3, 1, 2, 3, 0, time.UTC))
	cond := func(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: at}
	}
	pod := func(rv string, cs ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}, Status: corev1.PodStatus{Conditions: cs}}
	}
	stamp := `"lastProbeTime":null,"lastTransitionTime":"2026-12-03T01:02:03Z"`
	cases := []struct {
		name      string
		old, next *corev1.Pod
		want      string
		ok        bool
	}{
		{name: "no conditions before: not expressed",
			old: pod("5"), next: pod("5", cond("InPlaceUpdateReady", "True")), want: "null"},
		{name: "a changed condition is replaced where its type is",
			old:  pod("5", cond("PodScheduled", "True"), cond("InPlaceUpdateReady", "False")),
			next: pod("5", cond("PodScheduled", "True"), cond("InPlaceUpdateReady", "True")), ok: true,
			want: `[{"op":"test","path":"/status/conditions/1/type","value":"InPlaceUpdateReady"},` +
				`{"op":"replace","path":"/status/conditions/1","value":{"type":"InPlaceUpdateReady","status":"True",` + stamp + `}}]`},
		{name: "a new condition is appended",
			old:  pod("5", cond("PodScheduled", "True")),
			next: pod("5", cond("PodScheduled", "True"), cond("KruisePodReady", "True")), ok: true,
			want: `[{"op":"add","path":"/status/conditions/-","value":{"type":"KruisePodReady","status":"True",` + stamp + `}}]`},
		{name: "nothing changed", old: pod("5", cond("PodScheduled", "True")), next: pod("5", cond("PodScheduled", "True")), ok: true, want: "null"},
		{name: "a dropped condition cannot be expressed",
			old: pod("5", cond("PodScheduled", "True"), cond("KruisePodReady", "True")), next: pod("5", cond("PodScheduled", "True")), want: "null"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ops, ok := conditionOps(c.old, c.next)
			got, err := json.Marshal(ops)
			if err != nil || string(got) != c.want || ok != c.ok {
				t.Fatalf("conditionOps = %s, %v, %v\nwant %s, %v", got, ok, err, c.want, c.ok)
			}
		})
	}
}

func TestSettleMergePatch(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 3, 1, 2, 3, 0, time.UTC))
	old := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a", "state": "PreparingNormal", "gone": "x"}},
		Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: "PodScheduled", Status: "True"}}},
	}
	next := old.DeepCopy()
	next.Labels["state"] = "Normal"
	delete(next.Labels, "gone")
	next.Annotations = map[string]string{"stamp": "t"}
	next.Status.Conditions = append(next.Status.Conditions, corev1.PodCondition{Type: "KruisePodReady", Status: "True", LastTransitionTime: at})
	got, err := json.Marshal(settleMergePatch(old, next))
	want := `{"metadata":{"annotations":{"stamp":"t"},"labels":{"gone":null,"state":"Normal"}},` +
		`"status":{"conditions":[{"type":"KruisePodReady","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-03T01:02:03Z"}]}}`
	if err != nil || string(got) != want {
		t.Fatalf("settleMergePatch = %s, %v\nwant %s", got, err, want)
	}
}
