package bench

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestGateSettlerWritesEachNewPodOnce(t *testing.T) {
	var mu sync.Mutex
	patched := map[string]int{}
	s := &gateSettler{gates: benchGates, patch: gatesPatch(benchGates), sent: map[types.UID]bool{}, slots: make(chan struct{}, 2),
		pods: func(_ context.Context, name string, _ types.PatchType, _ []byte, _ metav1.PatchOptions, sub ...string) (*corev1.Pod, error) {
			if len(sub) != 1 || sub[0] != "status" {
				t.Errorf("patch of %s sent to %v, want the status subresource", name, sub)
			}
			mu.Lock()
			patched[name]++
			mu.Unlock()
			return nil, nil
		}}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}}
	}
	settled := pod("settled")
	for _, g := range benchGates {
		settled.Status.Conditions = append(settled.Status.Conditions, corev1.PodCondition{Type: g, Status: corev1.ConditionTrue})
	}
	deleting := pod("deleting")
	deleting.DeletionTimestamp = &metav1.Time{}
	for _, p := range []*corev1.Pod{pod("new"), pod("new"), settled, deleting, pod("other")} {
		s.observe(context.Background(), p)
	}
	s.wg.Wait()
	if len(patched) != 2 || patched["new"] != 1 || patched["other"] != 1 || s.writes.Load() != 2 {
		t.Errorf("patched %v (%d writes), want new and other once each", patched, s.writes.Load())
	}
	var body struct {
		Status corev1.PodStatus `json:"status"`
	}
	if err := json.Unmarshal(s.patch, &body); err != nil || len(body.Status.Conditions) != len(benchGates) {
		t.Fatalf("patch %s: %v", s.patch, err)
	}
	settledByPatch := pod("x")
	settledByPatch.Status = body.Status
	if !gatesSet(settledByPatch, benchGates) {
		t.Error("the patch does not set every gate True")
	}
}
