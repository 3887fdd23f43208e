package batchrelease

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestReadyWaits(t *testing.T) {
	var w readyWaits
	if !w.wakes("a") {
		t.Fatal("a release never read wakes on every Ready pod")
	}
	w.planned("a", 3, 1)
	if !w.wakes("a") {
		t.Fatal("planned without reading: the wait must not start")
	}
	w.reading("a")
	if !w.wakes("a") {
		t.Fatal("a release reading its pods wakes on every Ready pod")
	}
	// That pod counts toward the wait planned next: the read may have missed it.
	w.planned("a", 4, 1)
	if w.wakes("a") || !w.wakes("a") {
		t.Error("1 Ready at the read and 1 during it: the second Ready pod after it must wake the release, not the first")
	}
	w.reading("a")
	w.planned("a", 4, 1)
	for i, want := range []bool{false, false, true, true} {
		if got := w.wakes("a"); got != want {
			t.Errorf("Ready pod %d since the read: wakes = %v, want %v", i+1, got, want)
		}
	}
	w.reading("a")
	w.planned("a", 0, 5)
	if !w.wakes("a") {
		t.Error("a release that waits for something else than readiness wakes on every Ready pod")
	}
	w.reading("a")
	w.planned("a", 9, 0)
	w.forget("a")
	if !w.wakes("a") {
		t.Error("a forgotten release wakes on every Ready pod")
	}
}

// Through the pod event handler: the Ready pods of a batch that waits for three wake its release at the
// third, a pod turning not Ready at once.
func TestPodEventsWakeOnceEnoughPodsAreReady(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, rolloutsv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-abc", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d", Controller: ptr.To(true)}}}}
	br := &rolloutsv1beta1.BatchRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "br"},
		Spec: rolloutsv1beta1.BatchReleaseSpec{WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}
	br.Status.Phase = rolloutsv1beta1.RolloutPhaseProgressing
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&rolloutsv1beta1.BatchRelease{}, workloadRefIndex, workloadRefKey)
	r := &Reconciler{Client: c.WithObjects(rs, br).Build()}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	pod := func(ready corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-abc-1", OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "rs", Controller: ptr.To(true)}}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
		}
	}
	h := r.podEvents()
	woken := func(before, after corev1.ConditionStatus) bool {
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: pod(before), ObjectNew: pod(after)}, q)
		if q.Len() == 0 {
			return false
		}
		item, _ := q.Get()
		q.Done(item)
		return true
	}
	r.waits.reading(br.UID)
	r.waits.planned(br.UID, 3, 1)
	if woken(corev1.ConditionFalse, corev1.ConditionTrue) {
		t.Error("the second Ready pod of three woke the release")
	}
	if !woken(corev1.ConditionFalse, corev1.ConditionTrue) {
		t.Error("the third Ready pod of three did not wake the release")
	}
	r.waits.reading(br.UID)
	r.waits.planned(br.UID, 3, 1)
	if !woken(corev1.ConditionTrue, corev1.ConditionFalse) {
		t.Error("a pod turning not Ready did not wake the release")
	}
}
