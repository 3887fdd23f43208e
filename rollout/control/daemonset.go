package control

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nativeDaemonSet is the partition-style control of an apps/v1 DaemonSet. A native DaemonSet has no
// partition: the control switches it to OnDelete and records each batch in an annotation, and the
// nativedaemonset controller deletes old pods until the batch is reached.
type nativeDaemonSet struct {
	c client.Client
	t Target
}

// NewNativeDaemonSet returns the partition-style control of a native DaemonSet.
func NewNativeDaemonSet(c client.Client, t Target) WorkloadControl {
	return &nativeDaemonSet{c: c, t: t}
}

func (d *nativeDaemonSet) get(ctx context.Context) (*appsv1.DaemonSet, error) {
	ds := &appsv1.DaemonSet{}
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: d.t.Namespace, Name: d.t.Ref.Name}, ds); err != nil {
		return nil, wrapGet(err, "DaemonSet", d.t.Namespace, d.t.Ref.Name)
	}
	return ds, nil
}

// observe reads the DaemonSet with its update revision and active pods.
func (d *nativeDaemonSet) observe(ctx context.Context) (*appsv1.DaemonSet, string, []corev1.Pod, error) {
	ds, err := d.get(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	sel, err := workloadSelector(ds.Spec.Selector)
	if err != nil {
		return nil, "", nil, fmt.Errorf("DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	var revisions appsv1.ControllerRevisionList
	if err := d.c.List(ctx, &revisions, client.InNamespace(ds.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, "", nil, fmt.Errorf("listing ControllerRevisions of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	pods, err := listActivePods(ctx, d.c, ds.Namespace, sel)
	if err != nil {
		return nil, "", nil, err
	}
	return ds, DaemonSetUpdateRevision(ds, revisions.Items), daemonSetPods(ds, pods), nil
}

// Read implements WorkloadControl.
func (d *nativeDaemonSet) Read(ctx context.Context) (*WorkloadInfo, error) {
	ds, update, pods, err := d.observe(ctx)
	if err != nil {
		return nil, err
	}
	return daemonSetInfo(ds, pods, update, d.t), nil
}

// Initialize implements WorkloadControl.
func (d *nativeDaemonSet) Initialize(ctx context.Context) error {
	ds, err := d.get(ctx)
	if err != nil {
		return err
	}
	return applyMergePatch(ctx, d.c, ds, daemonSetInitPatch(ds, d.t))
}

// UpgradeBatch implements WorkloadControl. Until the DaemonSet controller has recorded the revision of the
// current template there is nothing to ask for; the next call does it.
func (d *nativeDaemonSet) UpgradeBatch(ctx context.Context, batch Batch) error {
	desiredUpdated := batch.DesiredUpdated
	ds, update, pods, err := d.observe(ctx)
	if err != nil {
		return err
	}
	if ds.Status.ObservedGeneration < ds.Generation {
		return nil
	}
	stable := daemonSetStableRevision(ds, pods, update)
	return applyMergePatch(ctx, d.c, ds, daemonSetBatchPatch(ds, stable, update, desiredUpdated))
}

// Finalize implements WorkloadControl.
func (d *nativeDaemonSet) Finalize(ctx context.Context) (bool, error) {
	ds, err := d.get(ctx)
	if err != nil {
		return finalizeGone(err)
	}
	if patch := daemonSetFinalizePatch(ds, d.t); len(patch) > 0 {
		if err := applyMergePatch(ctx, d.c, ds, patch); err != nil {
			return false, err
		}
		// The status read with ds predates the patch: judge WaitResume on the next call.
		return !waitsForResume(d.t), nil
	}
	return !waitsForResume(d.t) || daemonSetResumed(ds), nil
}
