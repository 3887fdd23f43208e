package control

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// advancedDaemonSet is the partition-style control of an Advanced DaemonSet (apps.kruise.io/v1alpha1): its
// spec.updateStrategy.rollingUpdate.partition is the number of nodes kept on old revisions, counted over
// status.desiredNumberScheduled, as upstream Kruise Rollouts drives it. Flotilla's daemonset module or an
// upstream OpenKruise runs its pods.
type advancedDaemonSet struct {
	c client.Client
	t Target
}

// NewAdvancedDaemonSet returns the partition-style control of an Advanced DaemonSet.
func NewAdvancedDaemonSet(c client.Client, t Target) WorkloadControl {
	return &advancedDaemonSet{c: c, t: t}
}

func (d *advancedDaemonSet) get(ctx context.Context) (*kruiseappsv1alpha1.DaemonSet, error) {
	ds := &kruiseappsv1alpha1.DaemonSet{}
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: d.t.Namespace, Name: d.t.Ref.Name}, ds); err != nil {
		return nil, wrapGet(err, "DaemonSet", d.t.Namespace, d.t.Ref.Name)
	}
	return ds, nil
}

// Read implements WorkloadControl. The Advanced DaemonSet reports no updated-ready count: its pods are
// counted.
func (d *advancedDaemonSet) Read(ctx context.Context) (*WorkloadInfo, error) {
	ds, err := d.get(ctx)
	if err != nil {
		return nil, err
	}
	sel, err := workloadSelector(ds.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	pods, err := listActivePods(ctx, d.c, ds.Namespace, sel)
	if err != nil {
		return nil, err
	}
	return advancedDaemonSetInfo(ds, daemonSetPods(ds, pods), d.t), nil
}

// Initialize implements WorkloadControl.
func (d *advancedDaemonSet) Initialize(ctx context.Context) error {
	ds, err := d.get(ctx)
	if err != nil {
		return err
	}
	return applyMergePatch(ctx, d.c, ds, advancedDaemonSetInitPatch(ds, d.t))
}

// UpgradeBatch implements WorkloadControl.
func (d *advancedDaemonSet) UpgradeBatch(ctx context.Context, batch Batch) error {
	ds, err := d.get(ctx)
	if err != nil {
		return err
	}
	return applyMergePatch(ctx, d.c, ds, advancedDaemonSetBatchPatch(ds, batch.DesiredUpdated))
}

// Finalize implements WorkloadControl.
func (d *advancedDaemonSet) Finalize(ctx context.Context) (bool, error) {
	ds, err := d.get(ctx)
	if err != nil {
		return finalizeGone(err)
	}
	if patch := advancedDaemonSetFinalizePatch(ds, d.t); len(patch) > 0 {
		if err := applyMergePatch(ctx, d.c, ds, patch); err != nil {
			return false, err
		}
		// The status read with ds predates the patch: judge WaitResume on the next call.
		return !waitsForResume(d.t), nil
	}
	return !waitsForResume(d.t) || advancedDaemonSetResumed(ds), nil
}
