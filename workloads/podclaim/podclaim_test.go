package podclaim

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

var ownerKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

func pod(name string, lbls map[string]string, owner *appsv1.ReplicaSet) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: lbls}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, ownerKind)}
	}
	return p
}

// Claim keeps what belongs, releases what no longer does, adopts matching orphans and leaves the rest.
func TestClaim(t *testing.T) {
	owner := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "owner-uid"}}
	other := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns", UID: "other-uid"}}
	app := map[string]string{"app": "a"}
	deleting := pod("orphan-deleting", app, nil)
	deleting.DeletionTimestamp, deleting.Finalizers = ptr.To(metav1.Now()), []string{"hold"}
	objs := []client.Object{
		pod("kept", app, owner), pod("relabelled", map[string]string{"app": "b"}, owner), pod("orphan", app, nil),
		pod("orphan-other-labels", map[string]string{"app": "b"}, nil), pod("not-a-member", app, nil), deleting,
		pod("others", app, other),
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).
		WithIndex(&corev1.Pod{}, ControllerIndex, func(o client.Object) []string { return controllerKey(o.(*corev1.Pod)) }).Build()
	claimer := Claimer[*appsv1.ReplicaSet]{
		Kind: ownerKind, Recorder: events.NewFakeRecorder(10), Released: "test",
		Patch: func(ctx context.Context, _ *appsv1.ReplicaSet, p *corev1.Pod, change func(*corev1.Pod) bool) error {
			next := p.DeepCopy()
			change(next)
			return c.Patch(ctx, next, client.MergeFrom(p))
		},
		Member: func(_ *appsv1.ReplicaSet, p *corev1.Pod) bool { return p.Name != "not-a-member" },
	}
	got, err := claimer.Claim(t.Context(), FromClient(c), owner, labels.SelectorFromSet(app))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if want := []string{"kept", "orphan"}; !slices.Equal(names, want) {
		t.Errorf("claimed %v, want %v", names, want)
	}
	wantController := map[string]string{"kept": "owner-uid", "relabelled": "", "orphan": "owner-uid", "orphan-other-labels": "",
		"not-a-member": "", "orphan-deleting": "", "others": "other-uid"}
	for name, uid := range wantController {
		p := &corev1.Pod{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: name}, p); err != nil {
			t.Fatal(err)
		}
		if ref := metav1.GetControllerOf(p); string(ptr.Deref(ref, metav1.OwnerReference{}).UID) != uid {
			t.Errorf("pod %s: controller %v, want %q", name, ref, uid)
		}
	}
}

// A workload being deleted claims its own pods and changes none.
func TestClaimWhileDeleting(t *testing.T) {
	owner := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "owner-uid", DeletionTimestamp: ptr.To(metav1.Now())}}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).
		WithObjects(pod("relabelled", map[string]string{"app": "b"}, owner), pod("orphan", map[string]string{"app": "a"}, nil)).
		WithIndex(&corev1.Pod{}, ControllerIndex, func(o client.Object) []string { return controllerKey(o.(*corev1.Pod)) }).Build()
	claimer := Claimer[*appsv1.ReplicaSet]{Kind: ownerKind, Recorder: events.NewFakeRecorder(10),
		Patch: func(context.Context, *appsv1.ReplicaSet, *corev1.Pod, func(*corev1.Pod) bool) error {
			t.Error("a workload being deleted wrote a pod")
			return nil
		}}
	got, err := claimer.Claim(t.Context(), FromClient(c), owner, labels.SelectorFromSet(map[string]string{"app": "a"}))
	if err != nil || len(got) != 1 || got[0].Name != "relabelled" {
		t.Errorf("claimed %v (%v), want only its own pod", got, err)
	}
}
