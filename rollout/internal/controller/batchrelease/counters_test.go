package batchrelease

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/reconcileutil"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
)

func TestCounterWritesHoldOnlyCounterChanges(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	br := &rolloutsv1beta1.BatchRelease{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	br.Status.CanaryStatus = rolloutsv1beta1.BatchReleaseCanaryStatus{CurrentBatchState: rolloutsv1beta1.VerifyingBatchState, UpdatedReplicas: 10}
	counted := br.Status.DeepCopy()
	counted.CanaryStatus.UpdatedReadyReplicas = 4
	ready := counted.DeepCopy()
	ready.CanaryStatus.CurrentBatchState = rolloutsv1beta1.ReadyBatchState
	var c reconcileutil.ProgressWrites
	hold := func(st *rolloutsv1beta1.BatchReleaseStatus, after time.Duration) time.Duration {
		return c.Hold(br.UID, countersOnly(br.Status, *st), now.Add(after))
	}
	if wait := hold(counted, 0); wait != 0 {
		t.Errorf("first counter write held %v", wait)
	}
	c.Mark(br.UID, now)
	if wait := hold(counted, 300*time.Millisecond); wait != reconcileutil.ProgressInterval-300*time.Millisecond {
		t.Errorf("counter write 300ms after the last one held %v, want %v", wait, reconcileutil.ProgressInterval-300*time.Millisecond)
	}
	if wait := hold(ready, 300*time.Millisecond); wait != 0 {
		t.Errorf("a batch state change held %v", wait)
	}
	if wait := hold(&br.Status, 300*time.Millisecond); wait != 0 {
		t.Errorf("no change held %v (patchStatus writes nothing anyway)", wait)
	}
	if wait := hold(counted, reconcileutil.ProgressInterval); wait != 0 {
		t.Errorf("counter write an interval after the last one held %v", wait)
	}
}

func TestCountPodsRaisesTheWorkloadsCounts(t *testing.T) {
	readyPod := func(uid string, ready corev1.ConditionStatus, deleting bool) *corev1.Pod {
		p := pod(uid, "", deleting)
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
		return p
	}
	pods := []*corev1.Pod{readyPod("a", corev1.ConditionTrue, false), readyPod("b", corev1.ConditionTrue, false),
		readyPod("c", corev1.ConditionFalse, false), readyPod("d", corev1.ConditionTrue, true)}
	v := &plan.WorkloadView{Updated: 2, UpdatedReady: 1}
	countPods(v, pods)
	if v.Updated != 3 || v.UpdatedReady != 2 {
		t.Errorf("updated %d ready %d, want 3 and 2 (the deleting pod counts for neither)", v.Updated, v.UpdatedReady)
	}
	v = &plan.WorkloadView{Updated: 5, UpdatedReady: 4}
	countPods(v, pods)
	if v.Updated != 5 || v.UpdatedReady != 4 {
		t.Errorf("counts the workload reports higher were lowered to %d and %d", v.Updated, v.UpdatedReady)
	}
}
