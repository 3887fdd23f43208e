package podcondition

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const gate corev1.PodConditionType = "Gate"

func TestSet(t *testing.T) {
	t0, t1 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	pod := &corev1.Pod{}
	if !Set(pod, gate, corev1.ConditionFalse, "Start", t0) || Get(pod, gate).Status != corev1.ConditionFalse {
		t.Fatalf("a missing condition must be added: %v", pod.Status.Conditions)
	}
	if Set(pod, gate, corev1.ConditionFalse, "Start", t1) {
		t.Fatal("setting the same status and reason must change nothing")
	}
	if !Set(pod, gate, corev1.ConditionFalse, "Other", t1) || !Get(pod, gate).LastTransitionTime.Equal(&t0) {
		t.Fatalf("a reason change must keep the transition time: %v", Get(pod, gate))
	}
	if !Set(pod, gate, corev1.ConditionTrue, "", t1) || !Get(pod, gate).LastTransitionTime.Equal(&t1) {
		t.Fatalf("a status change must move the transition time: %v", Get(pod, gate))
	}
	if Get(nil, gate) != nil {
		t.Fatal("a nil pod has no condition")
	}
}

func TestMarkNotReady(t *testing.T) {
	now := metav1.Now()
	pod := &corev1.Pod{}
	if MarkNotReady(pod, "R", "m", now) || IsReady(pod) {
		t.Fatal("a pod without a Ready condition must be left alone")
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if !IsReady(pod) || !MarkNotReady(pod, "R", "m", now) || IsReady(pod) || MarkNotReady(pod, "R", "m", now) {
		t.Fatalf("Ready must turn False once: %v", pod.Status.Conditions)
	}
}

func TestGates(t *testing.T) {
	pod := &corev1.Pod{}
	if HasGate(pod, gate) || !AddGate(pod, gate) || AddGate(pod, gate) || !HasGate(pod, gate) || len(pod.Spec.ReadinessGates) != 1 {
		t.Fatalf("gates = %v", pod.Spec.ReadinessGates)
	}
	if AddGate(nil, gate) || HasGate(nil, gate) {
		t.Fatal("a nil pod has no gates")
	}
}

func TestContainerStatus(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "a"}, {Name: "b", ContainerID: "cri://b"}}}}
	s := ContainerStatus(pod, "b")
	if s == nil || s.ContainerID != "cri://b" {
		t.Fatalf("ContainerStatus(b) = %+v", s)
	}
	s.RestartCount = 3
	if pod.Status.ContainerStatuses[1].RestartCount != 3 {
		t.Error("the status returned is a copy, not the pod's")
	}
	if ContainerStatus(pod, "c") != nil || ContainerStatus(nil, "a") != nil {
		t.Error("a missing container or pod has a status")
	}
}
