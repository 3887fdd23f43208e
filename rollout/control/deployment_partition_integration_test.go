package control_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/test/managertest"
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
	managertest.RequireCluster(t, clusterConfig)
	t.Parallel()
	c := directClient(t)
	ns := managertest.Namespace(t, c, "control-it")
	d := blueGreenDeployment(ns)
	d.Spec.Replicas = ptr.To[int32](0)
	if err := c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	ours, theirs := partitionTarget(ns, d.Name), partitionTarget(ns, d.Name)
	// Initialize of a Deployment without annotations is guarded by resourceVersion; the BatchRelease retries
	// its conflicts with kube-controller-manager's status writes, and so does the test.
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
	if err := control.NewDeploymentPartition(staleReads{c, stale}, ours).UpgradeBatch(t.Context(), control.Batch{DesiredUpdated: 2}); err != nil {
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
	err := control.NewDeploymentPartition(staleReads{c, stale}, ours).UpgradeBatch(t.Context(), control.Batch{DesiredUpdated: 3})
	if !apierrors.IsConflict(err) {
		t.Fatalf("UpgradeBatch from a read before a strategy change: %v, want a conflict", err)
	}
	if got := read().Annotations[rolloutsv1beta1.DeploymentStrategyAnnotation]; got != strategy {
		t.Fatalf("strategy %s, want the one written meanwhile", got)
	}

	if err := initialize(theirs); err != nil {
		t.Fatal(err)
	}
	if err := control.NewDeploymentPartition(c, ours).UpgradeBatch(t.Context(), control.Batch{DesiredUpdated: 3}); err == nil {
		t.Fatal("the release that lost control moved the partition")
	}
	if got := partition(); got != 0 {
		t.Errorf("partition %d after the takeover, want the new release's 0", got)
	}
}

// TestDeploymentPartitionInitializeFromAStaleRead takes a held Deployment over through the apiserver from
// reads the cache has not caught up with: one that missed a status write (kube-controller-manager's) takes
// it over; one that missed a change of its strategy gets a conflict and leaves that change as written.
func TestDeploymentPartitionInitializeFromAStaleRead(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	t.Parallel()
	c := directClient(t)
	ns := managertest.Namespace(t, c, "control-it")
	held := func(name string) *appsv1.Deployment {
		d := blueGreenDeployment(ns)
		d.Name, d.Labels = name, map[string]string{rolloutsv1beta1.WorkloadTypeLabel: rolloutsv1beta1.WorkloadTypeDeployment}
		d.Annotations = map[string]string{rolloutsv1beta1.InProgressingAnnotation: `{"rolloutName":"web"}`}
		d.Spec.Paused = true
		if err := c.Create(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		return d
	}

	statusWritten := held("status-written")
	stale := statusWritten.DeepCopy()
	// kube-controller-manager may write the new Deployment's status first; the stale read predates both.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mustGet(t, c, statusWritten)
		statusWritten.Status.CollisionCount = ptr.To[int32](7)
		return c.Status().Update(t.Context(), statusWritten)
	}); err != nil {
		t.Fatal(err)
	}
	target := partitionTarget(ns, statusWritten.Name)
	if err := control.NewDeploymentPartition(staleReads{c, stale}, target).Initialize(t.Context()); err != nil {
		t.Fatalf("Initialize from a read before a status write: %v", err)
	}
	mustGet(t, c, statusWritten)
	if !control.ControlledBy(statusWritten.Annotations, target.Owner) || statusWritten.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("not taken over: annotations %v, strategy %s", statusWritten.Annotations, statusWritten.Spec.Strategy.Type)
	}

	strategyChanged := held("strategy-changed")
	stale = strategyChanged.DeepCopy()
	patch := []byte(`{"spec":{"strategy":{"rollingUpdate":{"maxSurge":1}}}}`)
	if err := c.Patch(t.Context(), strategyChanged, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	err := control.NewDeploymentPartition(staleReads{c, stale}, partitionTarget(ns, strategyChanged.Name)).Initialize(t.Context())
	if !apierrors.IsConflict(err) {
		t.Fatalf("Initialize from a read before a strategy change: %v, want a conflict", err)
	}
	mustGet(t, c, strategyChanged)
	if got := strategyChanged.Spec.Strategy; got.Type != appsv1.RollingUpdateDeploymentStrategyType || got.RollingUpdate.MaxSurge.IntValue() != 1 {
		t.Errorf("strategy %+v, want the one written meanwhile", got)
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

// TestDeploymentPartitionFinalizeUnstamps resumes a Deployment only once no ReplicaSet carries batch labels
// and every ReplicaSet's controller has observed that: kube-controller-manager would take a stamped template
// for another revision, bump the collision count and roll every pod to a ReplicaSet of its own. Finalize
// first removes the stamps and the release's pod labels, then waits; kube-controller-manager then adopts the
// release's new ReplicaSet.
func TestDeploymentPartitionFinalizeUnstamps(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	t.Parallel()
	c := directClient(t)
	target, d, rs := stampedRelease(t, c)
	ctl := control.NewDeploymentPartition(c, target)

	if _, err := ctl.Finalize(t.Context()); !errors.Is(err, control.ErrNotObserved) {
		t.Fatalf("Finalize with a stamped ReplicaSet: %v, want ErrNotObserved", err)
	}
	read(t, c, d, rs)
	if stamped := control.StampedBatchLabels(&rs.Spec.Template, &d.Spec.Template); stamped != nil || !d.Spec.Paused ||
		d.Annotations[control.BatchPodLabelsAnnotation] != "" {
		t.Fatalf("after the first Finalize: stamps %v, paused %v, pod labels %q; want no stamps, paused, no pod labels",
			stamped, d.Spec.Paused, d.Annotations[control.BatchPodLabelsAnnotation])
	}
	eventually(t, "Finalize", func(ctx context.Context) (bool, error) {
		done, err := ctl.Finalize(ctx)
		if errors.Is(err, control.ErrNotObserved) || apierrors.IsConflict(err) {
			return false, nil
		}
		return done, err
	})
	eventually(t, "kube-controller-manager adopts the new ReplicaSet", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(rs), rs)
		return err == nil && ptr.Deref(rs.Spec.Replicas, 0) == 4, err
	})
	read(t, c, d)
	list := &appsv1.ReplicaSetList{}
	if err := c.List(t.Context(), list, client.InNamespace(d.Namespace)); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Paused || d.Status.CollisionCount != nil || len(list.Items) != 2 {
		t.Errorf("resumed: paused %v, collision count %v, %d ReplicaSets; want resumed, no collision, the old and the new one",
			d.Spec.Paused, d.Status.CollisionCount, len(list.Items))
	}
}

// TestDeploymentPartitionFinalizeFromAStaleRead resumes a Deployment read before the Rollout took its
// in-progressing mark off (the two writes come in the same moment), waits rather than writes again when the
// read still misses that write, and refuses one read before another release took the Deployment over.
func TestDeploymentPartitionFinalizeFromAStaleRead(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	t.Parallel()
	c := directClient(t)
	d := blueGreenDeployment(managertest.Namespace(t, c, "control-it"))
	d.Spec.Replicas = ptr.To[int32](0)
	d.Annotations = map[string]string{rolloutsv1beta1.InProgressingAnnotation: `{"rolloutName":"web"}`}
	if err := c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	ours, theirs := partitionTarget(d.Namespace, d.Name), partitionTarget(d.Namespace, d.Name)
	initialize := func(target control.Target) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			return control.NewDeploymentPartition(c, target).Initialize(t.Context())
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Finalize from a fixed read, once kube-controller-manager has observed the ReplicaSets it lists live.
	finalize := func(stale *appsv1.Deployment, target control.Target) error {
		t.Helper()
		var err error
		eventually(t, "Finalize past the wait for the ReplicaSet controller", func(ctx context.Context) (bool, error) {
			_, err = control.NewDeploymentPartition(staleReads{c, stale}, target).Finalize(ctx)
			return !errors.Is(err, control.ErrNotObserved), nil
		})
		return err
	}
	initialize(ours)
	read(t, c, d)
	stale := d.DeepCopy()
	unmark := []byte(`{"metadata":{"annotations":{"` + rolloutsv1beta1.InProgressingAnnotation + `":null}}}`)
	if err := c.Patch(t.Context(), d.DeepCopy(), client.RawPatch(types.MergePatchType, unmark)); err != nil {
		t.Fatal(err)
	}
	if err := finalize(stale, ours); err != nil {
		t.Fatalf("Finalize from a read before the mark went: %v", err)
	}
	// A cache that does not show that write yet is waited for: the write, its test failing, would not go again.
	if done, err := control.NewDeploymentPartition(staleReads{c, stale}, ours).Finalize(t.Context()); done || err != nil {
		t.Fatalf("Finalize again from the read before its own write: done %v, %v; want not done, no error", done, err)
	}
	read(t, c, d)
	_, marked := d.Annotations[rolloutsv1beta1.InProgressingAnnotation]
	if d.Spec.Paused || marked || control.ControlledBy(d.Annotations, ours.Owner) {
		t.Fatalf("after Finalize: paused %v, marked %v, controlled %v; want resumed, unmarked, released", d.Spec.Paused, marked,
			control.ControlledBy(d.Annotations, ours.Owner))
	}

	initialize(ours)
	read(t, c, d)
	stale = d.DeepCopy()
	initialize(theirs)
	if err := finalize(stale, ours); !apierrors.IsConflict(err) {
		t.Fatalf("Finalize from a read before another release took over: %v, want a conflict", err)
	}
	read(t, c, d)
	if !d.Spec.Paused || !control.ControlledBy(d.Annotations, theirs.Owner) {
		t.Errorf("the other release's Deployment: paused %v, controlled by it %v; want both", d.Spec.Paused,
			control.ControlledBy(d.Annotations, theirs.Owner))
	}
}

// stampedRelease is a Deployment under a partition-style release of a new template whose new ReplicaSet the
// Advanced Deployment controller created stamped with the first batch's pod labels.
func stampedRelease(t *testing.T, c client.Client) (control.Target, *appsv1.Deployment, *appsv1.ReplicaSet) {
	t.Helper()
	d := blueGreenDeployment(managertest.Namespace(t, c, "control-it"))
	if err := c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	target := partitionTarget(d.Namespace, d.Name)
	ctl := control.NewDeploymentPartition(c, target)
	labels := control.BatchPodLabels("v2", 0)
	for _, step := range []func() error{
		func() error { return ctl.Initialize(t.Context()) },
		func() error { return updateTemplate(t, c, d, podTemplate("web", "registry.example/web:v2")) },
		func() error {
			return ctl.UpgradeBatch(t.Context(), control.Batch{DesiredUpdated: 4, PodLabels: labels})
		},
	} {
		if err := retry.RetryOnConflict(retry.DefaultRetry, step); err != nil {
			t.Fatal(err)
		}
	}
	read(t, c, d)
	if got := control.BatchPodLabelsFrom(d.Annotations); !maps.Equal(got, labels) {
		t.Fatalf("pod labels %v after UpgradeBatch, want %v", got, labels)
	}
	rs := stampedReplicaSet(d, labels)
	if err := c.Create(t.Context(), rs); err != nil {
		t.Fatal(err)
	}
	return target, d, rs
}

// A release that leaves its Deployment paused (handed over, or deleted with KeepWorkloadPausedOnRolloutDeletion)
// removes the stamps too, without waiting: whoever resumes the Deployment later must find its templates clean.
func TestDeploymentPartitionFinalizePausedUnstamps(t *testing.T) {
	managertest.RequireCluster(t, clusterConfig)
	t.Parallel()
	c := directClient(t)
	target, d, rs := stampedRelease(t, c)
	target.Plan.BatchPartition = ptr.To[int32](0)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		_, err := control.NewDeploymentPartition(c, target).Finalize(t.Context())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	read(t, c, d, rs)
	if stamped := control.StampedBatchLabels(&rs.Spec.Template, &d.Spec.Template); stamped != nil || !d.Spec.Paused ||
		d.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation] != "" {
		t.Errorf("stamps %v, paused %v, control-info %q; want no stamps, paused, released",
			stamped, d.Spec.Paused, d.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation])
	}
}

// read refreshes each object from the apiserver.
func read(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
	}
}

// updateTemplate replaces d's pod template, as a user's new version does.
func updateTemplate(t *testing.T, c client.Client, d *appsv1.Deployment, template corev1.PodTemplateSpec) error {
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
		return err
	}
	d.Spec.Template = template
	return c.Update(t.Context(), d)
}

// stampedReplicaSet is a new ReplicaSet of d as the Advanced Deployment controller creates it while stamping.
func stampedReplicaSet(d *appsv1.Deployment, stamps map[string]string) *appsv1.ReplicaSet {
	hash := control.ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	template := d.Spec.Template.DeepCopy()
	template.Labels[rolloutsv1beta1.PodTemplateHashLabelKey] = hash
	labels := maps.Clone(template.Labels)
	maps.Copy(template.Labels, stamps)
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels[rolloutsv1beta1.PodTemplateHashLabelKey] = hash
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: selector, Template: *template},
	}
}
