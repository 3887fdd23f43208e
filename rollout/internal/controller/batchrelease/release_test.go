package batchrelease

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
)

// A deleted BatchRelease that has released its workload lets its finalizer go without a last status write, and
// a reconcile that still reads it with the finalizer (a cache behind) does not try again.
func TestReleasedBatchReleaseGoesWithoutAStatusWrite(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := rolloutsv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	br := &rolloutsv1beta1.BatchRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u",
		Finalizers: []string{rolloutsv1beta1.BatchReleaseFinalizer}, DeletionTimestamp: &now}}
	br.Status.Phase = rolloutsv1beta1.RolloutPhaseProgressing
	statusWrites := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(br).WithStatusSubresource(br).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string,
			obj client.Object, opts ...client.SubResourceUpdateOption) error {
			statusWrites++
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	read := &rolloutsv1beta1.BatchRelease{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(br), read); err != nil {
		t.Fatal(err)
	}
	stale := read.DeepCopy()
	r := &Reconciler{Client: c, Clock: clock.RealClock{}, Recorder: events.NewFakeRecorder(10)}
	d := &plan.BatchDecision{Status: plan.Completed(read.Status)}
	if err := r.apply(context.Background(), read, nil, d); err != nil {
		t.Fatal(err)
	}
	err := c.Get(context.Background(), client.ObjectKeyFromObject(br), &rolloutsv1beta1.BatchRelease{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("BatchRelease still there after its finalizer went: %v", err)
	}
	if statusWrites != 0 {
		t.Errorf("%d status writes to a BatchRelease on its way out", statusWrites)
	}
	if !r.written.Stale(stale) {
		t.Error("the version the finalizer removal replaced is not recorded: a cache behind would remove it again")
	}
}
