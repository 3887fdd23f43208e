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

// dsObservation is a native DaemonSet with its update revision and its active pods.
type dsObservation struct {
	ds     *appsv1.DaemonSet
	update string
	// current: the update revision records the DaemonSet's current template.
	current bool
	pods    []corev1.Pod
}

// consistent: the DaemonSet controller has observed the latest spec, and its revision is in the cache.
func (o dsObservation) consistent() bool {
	return o.current && o.ds.Status.ObservedGeneration >= o.ds.Generation
}

// observe reads the DaemonSet with its update revision and active pods.
func (d *nativeDaemonSet) observe(ctx context.Context) (dsObservation, error) {
	ds, err := d.get(ctx)
	if err != nil {
		return dsObservation{}, err
	}
	sel, err := workloadSelector(ds.Spec.Selector)
	if err != nil {
		return dsObservation{}, fmt.Errorf("DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	var revisions appsv1.ControllerRevisionList
	if err := d.c.List(ctx, &revisions, client.InNamespace(ds.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return dsObservation{}, fmt.Errorf("listing ControllerRevisions of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	pods, err := listActivePods(ctx, d.c, ds.Namespace, sel)
	if err != nil {
		return dsObservation{}, err
	}
	update, current := DaemonSetUpdateRevision(ds, revisions.Items)
	return dsObservation{ds: ds, update: update, current: current, pods: daemonSetPods(ds, pods)}, nil
}

// Read implements WorkloadControl.
func (d *nativeDaemonSet) Read(ctx context.Context) (*WorkloadInfo, error) {
	o, err := d.observe(ctx)
	if err != nil {
		return nil, err
	}
	return daemonSetInfo(o, d.t), nil
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
	o, err := d.observe(ctx)
	if err != nil || !o.consistent() {
		return err
	}
	stable := daemonSetStableRevision(o.ds, o.pods, o.update)
	return applyMergePatch(ctx, d.c, o.ds, daemonSetBatchPatch(o.ds, stable, o.update, batch.DesiredUpdated))
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
