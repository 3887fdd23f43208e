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
