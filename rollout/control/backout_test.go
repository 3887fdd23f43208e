package control

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// backOutPod is a pod of revision rev, created age minutes ago, Ready or not.
func backOutPod(name, rev string, age int, ready bool) corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"rev": rev},
			CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(-time.Duration(age) * time.Minute))},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

func TestChooseBackOut(t *testing.T) {
	updated := labels.SelectorFromSet(labels.Set{"rev": "new"})
	tests := []struct {
		name     string
		pods     []corev1.Pod
		replicas int32
		want     []string
	}{{
		name: "full strength: the newest serving updated pod goes, one at a time",
		pods: []corev1.Pod{backOutPod("a", "old", 9, true), backOutPod("b", "old", 9, true),
			backOutPod("c", "new", 3, true), backOutPod("d", "new", 2, true)},
		replicas: 4, want: []string{"d"},
	}, {
		name: "a pod short (one being replaced): no serving pod goes",
		pods: []corev1.Pod{backOutPod("a", "old", 9, true), backOutPod("b", "old", 1, false),
			backOutPod("c", "new", 3, true)},
		replicas: 4, want: nil,
	}, {
		name: "updated pods that do not serve all go at once, the serving ones wait",
		pods: []corev1.Pod{backOutPod("a", "old", 9, true), backOutPod("c", "new", 3, false),
			backOutPod("d", "new", 2, false), backOutPod("e", "new", 1, true)},
		replicas: 4, want: []string{"c", "d"},
	}, {
		name:     "an old pod not ready holds the serving updated pods",
		pods:     []corev1.Pod{backOutPod("a", "old", 9, false), backOutPod("c", "new", 3, true)},
		replicas: 2, want: nil,
	}, {
		name:     "no updated pod left: nothing to do",
		pods:     []corev1.Pod{backOutPod("a", "old", 9, true), backOutPod("b", "old", 9, true)},
		replicas: 2, want: nil,
	}, {
		name:     "same age: the name decides",
		pods:     []corev1.Pod{backOutPod("x", "new", 3, true), backOutPod("y", "new", 3, true)},
		replicas: 2, want: []string{"y"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range chooseBackOut(tt.pods, updated, tt.replicas) {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("evicted (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOwnedBy(t *testing.T) {
	owner := &metav1.ObjectMeta{UID: types.UID("cs-1")}
	mine := backOutPod("mine", "new", 1, true)
	mine.OwnerReferences = []metav1.OwnerReference{{UID: "cs-1", Controller: new(true)}}
	other := backOutPod("other", "new", 1, true)
	other.OwnerReferences = []metav1.OwnerReference{{UID: "cs-2", Controller: new(true)}}
	loose := backOutPod("loose", "new", 1, true)
	got := ownedBy([]corev1.Pod{mine, other, loose}, owner)
	if len(got) != 1 || got[0].Name != "mine" {
		t.Fatalf("ownedBy kept %d pods, want only the one the owner controls", len(got))
	}
}

func TestBatchPatchAbortRaisesPartition(t *testing.T) {
	partition := func(n int64) map[string]any {
		return map[string]any{"spec": map[string]any{"updateStrategy": map[string]any{"rollingUpdate": map[string]any{"partition": n}}}}
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want map[string]any
	}{
		{"a lowered partition is frozen again", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(2)), nil, nil), partition(frozenPartition)},
		{"already frozen: nothing to patch", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), int64(frozenPartition)), nil, nil), nil},
		{"no partition: nothing to raise", sts("apps/v1", "StatefulSet", partitionSpec(int64(4), nil), nil, nil), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := statefulSetBatchPatch(tt.obj, Batch{DesiredUpdated: 0, Abort: true})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}
