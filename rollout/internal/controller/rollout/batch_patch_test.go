package rollout_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/rollout"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

// The Rollout's write of the next batch does not lose to the BatchRelease's status write it has not read yet,
// and still refuses to undo a plan written since its read.
func TestBatchPatchFromAStaleRead(t *testing.T) {
	managertest.RequireCluster(t, cfg)
	c := managertest.DirectClient(t, cfg, newScheme(t))
	ns := namespace(t, c)
	ctx := context.Background()
	r := &rollout.Reconciler{Client: c}
	br := &rolloutsv1beta1.BatchRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: rolloutsv1beta1.BatchReleaseSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			ReleasePlan: rolloutsv1beta1.ReleasePlan{Batches: []rolloutsv1beta1.ReleaseBatch{
				{CanaryReplicas: intstr.FromInt32(1)}, {CanaryReplicas: intstr.FromString("100%")},
			}},
		},
	}
	if err := c.Create(ctx, br); err != nil {
		t.Fatal(err)
	}
	stale := br.DeepCopy()
	br.Status.ObservedGeneration = br.Generation
	if err := c.Status().Update(ctx, br); err != nil {
		t.Fatal(err)
	}

	next := stale.DeepCopy()
	next.Spec.ReleasePlan.BatchPartition = new(int32(1))
	if err := r.PatchBatch(ctx, stale, next); err != nil {
		t.Fatalf("next batch from a read before a status write: %v", err)
	}
	if got := batchPartition(t, c, br); got == nil || *got != 1 {
		t.Fatalf("batchPartition %v, want 1", got)
	}

	older := stale.DeepCopy()
	older.Spec.ReleasePlan.BatchPartition = new(int32(0))
	if err := r.PatchBatch(ctx, stale, older); !apierrors.IsConflict(err) {
		t.Fatalf("a plan from a read before the last plan: %v, want a conflict", err)
	}
	if got := batchPartition(t, c, br); got == nil || *got != 1 {
		t.Errorf("batchPartition %v, want the newer 1 kept", got)
	}
}

func batchPartition(t *testing.T, c client.Client, br *rolloutsv1beta1.BatchRelease) *int32 {
	t.Helper()
	got := &rolloutsv1beta1.BatchRelease{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(br), got); err != nil {
		t.Fatal(err)
	}
	return got.Spec.ReleasePlan.BatchPartition
}
