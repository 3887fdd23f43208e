package podreadiness

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

var (
	earlier = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	now     = metav1.NewTime(time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC))
)

const lifecycleDelete = `{"userAgent":"Lifecycle","key":"preDeleteHook"}`

// gatedPod declares the KruisePodReady gate and carries the given conditions.
func gatedPod(conds ...corev1.PodCondition) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}}}
	pod.Status.Conditions = conds
	return pod
}

func kruiseReady(status corev1.ConditionStatus, message string) corev1.PodCondition {
	return corev1.PodCondition{Type: pub.KruisePodReadyConditionType, Status: status, Message: message, LastTransitionTime: earlier}
}

func ready(status corev1.ConditionStatus) corev1.PodCondition {
	return corev1.PodCondition{Type: corev1.PodReady, Status: status, LastTransitionTime: earlier}
}

func readyHeld() corev1.PodCondition {
	return corev1.PodCondition{
		Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: ReasonReadinessGatesNotReady, LastTransitionTime: now,
		Message: `the status of pod readiness gate "KruisePodReady" is not "True", but False`,
	}
}

func heldSince(t metav1.Time, message string) corev1.PodCondition {
	return corev1.PodCondition{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionFalse, Message: message, LastTransitionTime: t}
}

func TestAddNotReady(t *testing.T) {
	cases := []struct {
		name        string
		pod         *corev1.Pod
		agent, key  string
		wantChanged bool
		want        []corev1.PodCondition
	}{{
		name: "no gate: the condition would not matter", pod: &corev1.Pod{},
		agent: "Lifecycle", key: "preDeleteHook",
	}, {
		name: "gate without condition", pod: gatedPod(ready(corev1.ConditionTrue)),
		agent: "Lifecycle", key: "preDeleteHook", wantChanged: true,
		want: []corev1.PodCondition{readyHeld(), heldSince(now, "["+lifecycleDelete+"]")},
	}, {
		name: "True turns False and Ready follows", pod: gatedPod(ready(corev1.ConditionTrue), kruiseReady(corev1.ConditionTrue, "")),
		agent: "Lifecycle", key: "preDeleteHook", wantChanged: true,
		want: []corev1.PodCondition{readyHeld(), heldSince(now, "["+lifecycleDelete+"]")},
	}, {
		name: "an empty list message counts as no holder", pod: gatedPod(kruiseReady(corev1.ConditionTrue, "[]")),
		agent: "Lifecycle", key: "preDeleteHook", wantChanged: true,
		want: []corev1.PodCondition{heldSince(now, "["+lifecycleDelete+"]")},
	}, {
		name:  "a second holder is sorted in, the transition time stays",
		pod:   gatedPod(ready(corev1.ConditionFalse), heldSince(earlier, `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`)),
		agent: "ContainerRecreateRequest", key: "crr-1", wantChanged: true,
		want: []corev1.PodCondition{ready(corev1.ConditionFalse), heldSince(earlier,
			`[{"userAgent":"ContainerRecreateRequest","key":"crr-1"},{"userAgent":"Lifecycle","key":"preUpdateHook"}]`)},
	}, {
		name: "already held", pod: gatedPod(heldSince(earlier, "["+lifecycleDelete+"]")),
		agent: "Lifecycle", key: "preDeleteHook",
		want: []corev1.PodCondition{heldSince(earlier, "["+lifecycleDelete+"]")},
	}, {
		name: "listed but True is repaired", pod: gatedPod(kruiseReady(corev1.ConditionTrue, "["+lifecycleDelete+"]")),
		agent: "Lifecycle", key: "preDeleteHook", wantChanged: true,
		want: []corev1.PodCondition{heldSince(now, "["+lifecycleDelete+"]")},
	}, {
		name: "a malformed message is replaced", pod: gatedPod(kruiseReady(corev1.ConditionTrue, "{oops")),
		agent: "Lifecycle", key: "preDeleteHook", wantChanged: true,
		want: []corev1.PodCondition{heldSince(now, "["+lifecycleDelete+"]")},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := AddNotReady(tc.pod, tc.agent, tc.key, now)
			if got != tc.wantChanged {
				t.Errorf("changed = %v, want %v", got, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.want, tc.pod.Status.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRemoveNotReady(t *testing.T) {
	two := `[{"userAgent":"Lifecycle","key":"preDeleteHook"},{"userAgent":"Lifecycle","key":"preUpdateHook"}]`
	cases := []struct {
		name        string
		pod         *corev1.Pod
		wantChanged bool
		want        []corev1.PodCondition
	}{{
		name: "nil pod",
	}, {
		name: "no condition", pod: gatedPod(),
	}, {
		name: "the last holder turns the condition True and leaves Ready to the kubelet",
		pod:  gatedPod(ready(corev1.ConditionFalse), heldSince(earlier, "["+lifecycleDelete+"]")), wantChanged: true,
		want: []corev1.PodCondition{ready(corev1.ConditionFalse), {Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue, LastTransitionTime: now}},
	}, {
		name: "another holder keeps it False", pod: gatedPod(heldSince(earlier, two)), wantChanged: true,
		want: []corev1.PodCondition{heldSince(earlier, `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`)},
	}, {
		name: "not a holder", pod: gatedPod(heldSince(earlier, `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`)),
		want: []corev1.PodCondition{heldSince(earlier, `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`)},
	}, {
		name: "a malformed message is left alone", pod: gatedPod(heldSince(earlier, `{"userAgent":"Lifecycle"}`)),
		want: []corev1.PodCondition{heldSince(earlier, `{"userAgent":"Lifecycle"}`)},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := RemoveNotReady(tc.pod, "Lifecycle", "preDeleteHook", now)
			if got != tc.wantChanged {
				t.Errorf("changed = %v, want %v", got, tc.wantChanged)
			}
			if tc.pod == nil {
				return
			}
			if diff := cmp.Diff(tc.want, tc.pod.Status.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHolders(t *testing.T) {
	cases := []struct {
		name    string
		pod     *corev1.Pod
		want    []Holder
		wantErr bool
	}{
		{name: "nil pod"},
		{name: "no condition", pod: gatedPod()},
		{name: "initialised", pod: gatedPod(kruiseReady(corev1.ConditionTrue, ""))},
		{name: "empty list", pod: gatedPod(kruiseReady(corev1.ConditionTrue, "[]")), want: []Holder{}},
		{
			name: "sorted by user agent then key, duplicates once",
			pod:  gatedPod(heldSince(earlier, `[{"userAgent":"b","key":"a"},{"userAgent":"a","key":"z"},{"userAgent":"a","key":"b"},{"userAgent":"b","key":"a"}]`)),
			want: []Holder{{"a", "b"}, {"a", "z"}, {"b", "a"}},
		},
		{name: "not JSON", pod: gatedPod(heldSince(earlier, "held by me")), wantErr: true},
		{name: "not a list", pod: gatedPod(heldSince(earlier, `{"userAgent":"a"}`)), wantErr: true},
		{name: "wrong field types", pod: gatedPod(heldSince(earlier, `[{"userAgent":1}]`)), wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Holders(tc.pod)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("holders (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHoldAndRelease walks two components holding and releasing the same pod.
func TestHoldAndRelease(t *testing.T) {
	pod := gatedPod(ready(corev1.ConditionTrue), kruiseReady(corev1.ConditionTrue, ""))
	AddNotReady(pod, "Lifecycle", "preUpdateHook", now)
	AddNotReady(pod, "ContainerRecreateRequest", "crr", now)
	RemoveNotReady(pod, "Lifecycle", "preUpdateHook", now)
	if c := Condition(pod); c.Status != corev1.ConditionFalse {
		t.Fatalf("released by one holder of two: %+v", c)
	}
	RemoveNotReady(pod, "ContainerRecreateRequest", "crr", now)
	if c := Condition(pod); c.Status != corev1.ConditionTrue || c.Message != "" {
		t.Fatalf("released by both: %+v", c)
	}
}

// FuzzHolders feeds arbitrary messages: nothing panics, and a holder added can be removed again.
func FuzzHolders(f *testing.F) {
	for _, seed := range []string{"", "[]", "[" + lifecycleDelete + "]", "{", `[{"userAgent":1}]`, "null", `[null]`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, message string) {
		pod := gatedPod(kruiseReady(corev1.ConditionFalse, message))
		_, _ = Holders(pod)
		AddNotReady(pod, "fuzz", "k", now)
		holders, err := Holders(pod)
		if err != nil || Condition(pod).Status != corev1.ConditionFalse {
			t.Fatalf("after AddNotReady: %v, %+v", err, Condition(pod))
		}
		if !RemoveNotReady(pod, "fuzz", "k", now) {
			t.Fatalf("the holder added is not removed; holders %v", holders)
		}
	})
}
