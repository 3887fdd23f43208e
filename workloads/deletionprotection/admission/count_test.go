package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestActivePods(t *testing.T) {
	deleting := metav1.Now()
	pods := []corev1.Pod{
		{Status: corev1.PodStatus{Phase: corev1.PodPending}},
		{Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		{Status: corev1.PodStatus{Phase: corev1.PodUnknown}},
		{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
		{Status: corev1.PodStatus{Phase: corev1.PodFailed}},
		{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleting}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
	}
	if got := ActivePods(pods); got != 3 {
		t.Errorf("%d active pods, want 3 (pending, running, unknown)", got)
	}
}

func TestBoundClaims(t *testing.T) {
	deleting := metav1.Now()
	claims := []corev1.PersistentVolumeClaim{
		{Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}},
		{Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}},
		{Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimLost}},
		{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleting}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}},
	}
	if got := BoundClaims(claims); got != 1 {
		t.Errorf("%d Bound claims, want 1", got)
	}
}
