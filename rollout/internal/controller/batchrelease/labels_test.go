package batchrelease

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pod(uid, id string, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid), Labels: map[string]string{}}}
	if id != "" {
		p.Labels["rollouts.kruise.io/rollout-id"] = id
	}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

func TestSentLabelsStandInForALaggingCache(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	var s sentLabels
	pods := []*corev1.Pod{pod("a", "r1", false), pod("b", "", false), pod("c", "", false), pod("d", "", true), pod("e", "r0", false)}
	todo, labelled := s.split(pods, "r1", now)
	if labelled != 1 || len(todo) != 3 {
		t.Fatalf("before any patch: labelled=%d todo=%d, want 1 and 3 (b, c and the old release's e)", labelled, len(todo))
	}
	s.record("b", "r1", now)
	todo, labelled = s.split(pods, "r1", now.Add(time.Second))
	if labelled != 2 || len(todo) != 2 {
		t.Errorf("after patching b: labelled=%d todo=%d, want 2 and 2", labelled, len(todo))
	}
	if _, labelled = s.split(pods, "r2", now.Add(time.Second)); labelled != 0 {
		t.Errorf("a patch for another release must not count, labelled=%d", labelled)
	}
	if _, labelled = s.split(pods, "r1", now.Add(2*sentLabelTTL)); labelled != 1 {
		t.Errorf("an expired record must not count, labelled=%d", labelled)
	}
}
