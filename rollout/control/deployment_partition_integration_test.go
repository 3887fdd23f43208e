package control_test

import (
	"context"
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
)

// staleReads serves one fixed copy of the Deployment, as a cache that has not caught up does.
type staleReads struct {
	client.Client
	d *appsv1.Deployment
}

func (s staleReads) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s.d.DeepCopyInto(obj.(*appsv1.Deployment))
	return nil
}

// TestDeploymentPartitionUpgradeBatch raises the partition of a held Deployment through the apiserver. A read
// that missed only status writes (kube-controller-manager's, with every pod) still moves the partition; a read
// that missed a change of the strategy annotation gets a conflict; a release that lost control gets an error.
func TestDeploymentPartitionUpgradeBatch(t *testing.T) {
	needCluster(t)
	t.Parallel()
	c := directClient(t)
	ns := newNamespace(t, c)
	d := blueGreenDeployment(ns)
	d.Spec.Replicas = ptr.To[int32](0)
	if err := c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	ours, theirs := partitionTarget(ns, d.Name), partitionTarget(ns, d.Name)
	// Initialize is guarded by resourceVersion; the BatchRelease retries its conflicts with
	// kube-controller-manager's status writes, and so does the test.
	initialize := func(target control.Target) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			return control.NewDeploymentPartition(c, target).Initialize(t.Context())
		})
	}
	if err := initialize(ours); err != nil {
		t.Fatal(err)
	}
	read := func() *appsv1.Deployment {
		got := &appsv1.Deployment{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(d), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	partition := func() int {
		s, _, err := control.DeploymentStrategyFrom(read().Annotations)
		if err != nil {
			t.Fatal(err)
		}
		return s.Partition.IntValue()
	}

	stale := read()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live := read()
		live.Status.CollisionCount = ptr.To[int32](7)
		return c.Status().Update(t.Context(), live)
	}); err != nil {
		t.Fatal(err)
	}
	if err := control.NewDeploymentPartition(staleReads{c, stale}, ours).UpgradeBatch(t.Context(), 2); err != nil {
		t.Fatalf("UpgradeBatch from a read before a status write: %v", err)
	}
	if got := partition(); got != 2 {
		t.Fatalf("partition %d, want 2", got)
	}

	stale = read()
	strategy := `{"rollingStyle":"Partition","paused":true,"partition":2}`
	patch := []byte(`{"metadata":{"annotations":{"` + rolloutsv1beta1.DeploymentStrategyAnnotation + `":` + quote(strategy) + `}}}`)
	if err := c.Patch(t.Context(), stale.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	err := control.NewDeploymentPartition(staleReads{c, stale}, ours).UpgradeBatch(t.Context(), 3)
	if !apierrors.IsConflict(err) {
		t.Fatalf("UpgradeBatch from a read before a strategy change: %v, want a conflict", err)
	}
	if got := read().Annotations[rolloutsv1beta1.DeploymentStrategyAnnotation]; got != strategy {
		t.Fatalf("strategy %s, want the one written meanwhile", got)
	}

	if err := initialize(theirs); err != nil {
		t.Fatal(err)
	}
	if err := control.NewDeploymentPartition(c, ours).UpgradeBatch(t.Context(), 3); err == nil {
		t.Fatal("the release that lost control moved the partition")
	}
	if got := partition(); got != 0 {
		t.Errorf("partition %d after the takeover, want the new release's 0", got)
	}
}

func partitionTarget(ns, name string) control.Target {
	return control.Target{Namespace: ns, Ref: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
		Owner: metav1.OwnerReference{APIVersion: "rollouts.kruise.io/v1beta1", Kind: "BatchRelease", Name: name,
			UID: uuid.NewUUID(), Controller: ptr.To(true)}}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
