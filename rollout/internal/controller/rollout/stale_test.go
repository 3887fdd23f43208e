package rollout

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/reconcileutil"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
)

// A reconcile that reads, from a cache behind, the very BatchRelease version its own last write to it replaced
// waits for the cache and writes nothing: planning from it would send that write again.
func TestReconcileWaitsForItsOwnBatchWrite(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, rolloutsv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	ro := &rolloutsv1beta1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "ro-uid", Finalizers: []string{rolloutsv1beta1.RolloutFinalizer}},
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Strategy: rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{
				Steps: []rolloutsv1beta1.CanaryStep{{Replicas: ptr.To(intstr.FromString("50%"))}}}},
		},
	}
	// A Rollout reconciled before carries its finalizer and hash annotation already.
	ro.Annotations = map[string]string{rolloutsv1beta1.RolloutHashAnnotation: plan.RolloutHash(ro.Spec.Strategy)}
	br := &rolloutsv1beta1.BatchRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "br-uid",
		OwnerReferences: []metav1.OwnerReference{*ownerRef(ro)}}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ro, d, br).WithStatusSubresource(ro, br).Build()
	controls := control.NewRegistry()
	if err := control.RegisterNative(controls, true); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c, Controls: controls, Clock: clock.RealClock{}, Recorder: events.NewFakeRecorder(10)}
	read := &rolloutsv1beta1.BatchRelease{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(br), read); err != nil {
		t.Fatal(err)
	}
	r.batchWritten.Record(read.UID, read.ResourceVersion)
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ro)})
	if err != nil || res.RequeueAfter != reconcileutil.StaleRecheck {
		t.Fatalf("Reconcile = %+v, %v; want a requeue after %v", res, err, reconcileutil.StaleRecheck)
	}
	after := &rolloutsv1beta1.BatchRelease{}
	roAfter := &rolloutsv1beta1.Rollout{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(br), after); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(ro), roAfter); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != read.ResourceVersion || roAfter.Status.Phase != "" {
		t.Errorf("wrote while its cache was behind: BatchRelease version %s -> %s, Rollout phase %q",
			read.ResourceVersion, after.ResourceVersion, roAfter.Status.Phase)
	}
	// Once the cache shows another version, the reconcile goes on.
	r.batchWritten.Record(read.UID, "older")
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ro)}); err != nil {
		t.Fatalf("Reconcile with the cache caught up: %v", err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(ro), roAfter); err != nil {
		t.Fatal(err)
	}
	if roAfter.Status.Phase == "" {
		t.Errorf("Reconcile with the cache caught up wrote no status")
	}
}
