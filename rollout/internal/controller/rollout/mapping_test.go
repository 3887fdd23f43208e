package rollout

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// A native DaemonSet's ControllerRevision reaches the Rollouts of that DaemonSet, and only those.
func TestRolloutsOfDaemonSetRevision(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := rolloutsv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	rolloutOf := func(name, kind, workload string) *rolloutsv1beta1.Rollout {
		return &rolloutsv1beta1.Rollout{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: rolloutsv1beta1.RolloutSpec{WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: kind, Name: workload}}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&rolloutsv1beta1.Rollout{}, WorkloadRefIndex, WorkloadRefKey).
		WithObjects(rolloutOf("agent", "DaemonSet", "agent"), rolloutOf("other", "DaemonSet", "other"),
			rolloutOf("sts", "StatefulSet", "agent")).Build()
	r := &Reconciler{Client: c}
	revision := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent-1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "u", Controller: ptr.To(true)}}}}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	r.rolloutsOfDaemonSetRevision().Create(t.Context(), event.CreateEvent{Object: revision}, q)
	if q.Len() != 1 {
		t.Fatalf("the revision woke %d Rollouts, want 1", q.Len())
	}
	if got, _ := q.Get(); got.NamespacedName != (client.ObjectKey{Namespace: "ns", Name: "agent"}) {
		t.Errorf("the revision maps to %v, want ns/agent", got)
	}
}

// A canary Deployment's events reach the Rollout whose BatchRelease controls it; a workload no release controls
// maps to no Rollout this way.
func TestRolloutOfRelease(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := rolloutsv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	controller := func(kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: rolloutsv1beta1.GroupVersion.String(), Kind: kind, Name: name, UID: "u",
			Controller: ptr.To(true)}}
	}
	br := &rolloutsv1beta1.BatchRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-release",
		OwnerReferences: controller("Rollout", "web")}}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(br).Build()}
	canary := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-canary",
		OwnerReferences: controller("BatchRelease", "web-release")}}
	got := r.rolloutOfRelease(t.Context(), canary)
	if len(got) != 1 || got[0].NamespacedName != (client.ObjectKey{Namespace: "ns", Name: "web"}) {
		t.Errorf("canary Deployment maps to %v, want ns/web", got)
	}
	for name, obj := range map[string]*appsv1.Deployment{
		"no owner":             {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}},
		"a release gone":       {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x", OwnerReferences: controller("BatchRelease", "gone")}},
		"another kind's owner": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "y", OwnerReferences: controller("Rollout", "web")}},
	} {
		if got := r.rolloutOfRelease(t.Context(), obj); len(got) != 0 {
			t.Errorf("%s: maps to %v, want none", name, got)
		}
	}
}
