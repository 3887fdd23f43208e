package lifecycle

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600))

func podWith(labels map[string]string, finalizers ...string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels, Finalizers: finalizers}}
}

func TestSetState(t *testing.T) {
	stamped := map[string]string{pub.LifecycleTimestampKey: "2026-03-04T04:06:07Z"}
	cases := []struct {
		name            string
		pod             *corev1.Pod
		state           pub.LifecycleStateType
		wantChanged     bool
		wantLabels      map[string]string
		wantAnnotations map[string]string
	}{{
		name: "nil pod", state: pub.LifecycleStateNormal,
	}, {
		name: "first state on a bare pod", pod: &corev1.Pod{}, state: pub.LifecycleStatePreparingNormal, wantChanged: true,
		wantLabels: map[string]string{pub.LifecycleStateKey: "PreparingNormal"}, wantAnnotations: stamped,
	}, {
		name: "a change keeps other metadata", state: pub.LifecycleStateNormal, wantChanged: true,
		pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": "web", pub.LifecycleStateKey: "PreparingNormal"},
			Annotations: map[string]string{"a": "b", pub.LifecycleTimestampKey: "old"},
		}},
		wantLabels:      map[string]string{"app": "web", pub.LifecycleStateKey: "Normal"},
		wantAnnotations: map[string]string{"a": "b", pub.LifecycleTimestampKey: "2026-03-04T04:06:07Z"},
	}, {
		name: "same state: the timestamp stays", state: pub.LifecycleStateNormal,
		pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{pub.LifecycleStateKey: "Normal"}, Annotations: map[string]string{pub.LifecycleTimestampKey: "old"},
		}},
		wantLabels: map[string]string{pub.LifecycleStateKey: "Normal"}, wantAnnotations: map[string]string{pub.LifecycleTimestampKey: "old"},
	}, {
		name: "empty state removes the label", pod: podWith(map[string]string{pub.LifecycleStateKey: "Normal"}), wantChanged: true,
		wantLabels: map[string]string{}, wantAnnotations: stamped,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := SetState(tc.pod, tc.state, now); got != tc.wantChanged {
				t.Errorf("changed = %v, want %v", got, tc.wantChanged)
			}
			if tc.pod == nil {
				return
			}
			if diff := cmp.Diff(tc.wantLabels, tc.pod.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAnnotations, tc.pod.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if State(tc.pod) != tc.state {
				t.Errorf("State = %q, want %q", State(tc.pod), tc.state)
			}
		})
	}
}

func TestHooked(t *testing.T) {
	hook := &pub.LifecycleHook{
		LabelsHandler:     map[string]string{"a": "true", "b": "yes"},
		FinalizersHandler: []string{"example.com/f1", "example.com/f2"},
	}
	all := podWith(map[string]string{"a": "true", "b": "yes"}, "example.com/f1", "example.com/f2")
	cases := []struct {
		name          string
		hook          *pub.LifecycleHook
		pod           *corev1.Pod
		any, allThere bool
	}{
		{name: "nil hook", pod: all},
		{name: "nil pod", hook: hook},
		{name: "no handler on the pod", hook: hook, pod: podWith(nil)},
		{name: "every handler", hook: hook, pod: all, any: true, allThere: true},
		{name: "one label", hook: hook, pod: podWith(map[string]string{"a": "true"}), any: true},
		{name: "one finalizer", hook: hook, pod: podWith(nil, "example.com/f2"), any: true},
		{name: "labels need the exact value", hook: hook, pod: podWith(map[string]string{"a": "false", "b": "Yes"})},
		{name: "an empty value matches only a present label", hook: &pub.LifecycleHook{LabelsHandler: map[string]string{"a": ""}}, pod: podWith(nil)},
		{name: "a present empty label", hook: &pub.LifecycleHook{LabelsHandler: map[string]string{"a": ""}}, pod: podWith(map[string]string{"a": ""}), any: true, allThere: true},
		{name: "a hook without handlers is all there and hooks nothing", hook: &pub.LifecycleHook{MarkPodNotReady: true}, pod: all, allThere: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsHooked(tc.hook, tc.pod); got != tc.any {
				t.Errorf("IsHooked = %v, want %v", got, tc.any)
			}
			if got := AllHooked(tc.hook, tc.pod); got != tc.allThere {
				t.Errorf("AllHooked = %v, want %v", got, tc.allThere)
			}
		})
	}
}
