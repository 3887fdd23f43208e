package batchrelease

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestPodProgress(t *testing.T) {
	ready := func(p *corev1.Pod) *corev1.Pod {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		return p
	}
	creates := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"a new pod to label", pod("a", "", false), true},
		{"a new pod created with its labels", pod("b", "r1", false), false},
		{"a labelled pod listed Ready", ready(pod("c", "r1", false)), true},
	}
	for _, tt := range creates {
		if got := podProgress.Create(event.CreateEvent{Object: tt.pod}); got != tt.want {
			t.Errorf("create, %s: %v, want %v", tt.name, got, tt.want)
		}
	}
	updates := []struct {
		name          string
		before, after *corev1.Pod
		want          bool
	}{
		{"Ready", pod("a", "r1", false), ready(pod("a", "r1", false)), true},
		{"labelled", pod("a", "", false), pod("a", "r1", false), false},
		{"deleting", pod("a", "r1", false), pod("a", "r1", true), true},
	}
	for _, tt := range updates {
		if got := podProgress.Update(event.UpdateEvent{ObjectOld: tt.before, ObjectNew: tt.after}); got != tt.want {
			t.Errorf("update, %s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if !podProgress.Delete(event.DeleteEvent{Object: pod("a", "r1", false)}) {
		t.Errorf("a deleted pod must wake its release")
	}
}
