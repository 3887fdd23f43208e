package control

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// cloneSetPartition is the partition-style control of a kruise CloneSet: spec.updateStrategy.partition is the
// number of pods kept on the current revision.
type cloneSetPartition struct {
	c client.Client
	t Target
}

// NewCloneSetPartition returns the partition-style control of a CloneSet.
func NewCloneSetPartition(c client.Client, t Target) WorkloadControl {
	return &cloneSetPartition{c: c, t: t}
}

func (s *cloneSetPartition) get(ctx context.Context) (*kruiseappsv1alpha1.CloneSet, error) {
	cs := &kruiseappsv1alpha1.CloneSet{}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.t.Namespace, Name: s.t.Ref.Name}, cs); err != nil {
		return nil, wrapGet(err, "CloneSet", s.t.Namespace, s.t.Ref.Name)
	}
	return cs, nil
}

// Read implements WorkloadControl.
func (s *cloneSetPartition) Read(ctx context.Context) (*WorkloadInfo, error) {
	cs, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	return cloneSetInfo(cs, s.t), nil
}

// Initialize implements WorkloadControl.
func (s *cloneSetPartition) Initialize(ctx context.Context) error {
	cs, err := s.get(ctx)
	if err != nil {
		return err
	}
	return applyMergePatch(ctx, s.c, cs, cloneSetInitPatch(cs, s.t))
}

// UpgradeBatch implements WorkloadControl.
func (s *cloneSetPartition) UpgradeBatch(ctx context.Context, batch Batch) error {
	desiredUpdated := batch.DesiredUpdated
	cs, err := s.get(ctx)
	if err != nil {
		return err
	}
	if patch := cloneSetBatchPatch(cs, desiredUpdated, batch.Abort); len(patch) > 0 || !batch.Abort {
		return applyMergePatch(ctx, s.c, cs, patch)
	}
	return s.backOut(ctx, cs)
}

// backOut takes an aborted release's updated pods away once the CloneSet controller has seen the raised
// partition: it then recreates them on the stable revision (the CloneSetPartitionRollback gate of upstream's
// controller would roll them back in place; evicting them works with and without it).
func (s *cloneSetPartition) backOut(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet) error {
	info := cloneSetInfo(cs, s.t)
	if !info.Consistent || info.UpdateRevision == info.StableRevision {
		return nil
	}
	sel, err := workloadSelector(cs.Spec.Selector)
	if err != nil {
		return err
	}
	return backOut(ctx, s.c, backOutTarget{Owner: cs, Replicas: info.Replicas, Pods: sel, Updated: info.UpdatedPods})
}

// Finalize implements WorkloadControl.
func (s *cloneSetPartition) Finalize(ctx context.Context) (bool, error) {
	cs, err := s.get(ctx)
	if err != nil {
		return finalizeGone(err)
	}
	if patch := cloneSetFinalizePatch(cs, s.t); len(patch) > 0 {
		if err := applyMergePatch(ctx, s.c, cs, patch); err != nil {
			return false, err
		}
		// The status read with cs predates the patch: judge WaitResume on the next call.
		return !waitsForResume(s.t), nil
	}
	return !waitsForResume(s.t) || cloneSetResumed(cs), nil
}

// cloneSetShortHash is the pod-template-hash value of a CloneSet revision: its status revisions are
// "<name>-<hash>" (or just "<hash>" with the CloneSetShortHash gate), its pods carry the hash alone.
func cloneSetShortHash(revision string) string {
	return revision[strings.LastIndex(revision, "-")+1:]
}

func cloneSetReplicas(cs *kruiseappsv1alpha1.CloneSet) int32 {
	if cs.Spec.Replicas == nil {
		return 1
	}
	return max(*cs.Spec.Replicas, 0)
}

// cloneSetInfo builds the WorkloadInfo from the CloneSet's status.
func cloneSetInfo(cs *kruiseappsv1alpha1.CloneSet, t Target) *WorkloadInfo {
	update := cloneSetShortHash(cs.Status.UpdateRevision)
	sel, err := workloadSelector(cs.Spec.Selector)
	if err != nil {
		sel = labels.Nothing()
	}
	return &WorkloadInfo{
		Object:               cs,
		Replicas:             cloneSetReplicas(cs),
		UpdatedReplicas:      cs.Status.UpdatedReplicas,
		UpdatedReadyReplicas: cs.Status.UpdatedReadyReplicas,
		StableRevision:       cloneSetShortHash(cs.Status.CurrentRevision),
		UpdateRevision:       update,
		RevisionLabelKey:     rolloutsv1beta1.PodTemplateHashLabelKey,
		UpdatedPods:          revisionSelector(sel, rolloutsv1beta1.PodTemplateHashLabelKey, update),
		Consistent:           cs.Status.ObservedGeneration >= cs.Generation,
		Controlled:           ControlledBy(cs.Annotations, t.Owner),
	}
}

// cloneSetStableCount is how many pods a partition keeps on the current revision (percentages round up, as
// the CloneSet controller counts them); no partition keeps none.
func cloneSetStableCount(partition *intstr.IntOrString, replicas int32) int32 {
	if partition == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(partition, int(replicas), true)
	if err != nil {
		// An unreadable partition is treated as frozen: it must never let a batch go backwards.
		return replicas
	}
	return toInt32(int64(n))
}

var cloneSetPartitionPath = []string{"spec", "updateStrategy", "partition"}

// cloneSetInitPatch takes control and freezes the rollout at "100%"; a partition this release already
// lowered is kept.
func cloneSetInitPatch(cs *kruiseappsv1alpha1.CloneSet, t Target) map[string]any {
	patch := map[string]any{}
	controlled := ControlledBy(cs.Annotations, t.Owner)
	if !controlled {
		setNested(patch, ControlInfo(t.Owner), "metadata", "annotations", rolloutsv1beta1.BatchReleaseControlAnnotation)
	}
	p := cs.Spec.UpdateStrategy.Partition
	frozen := p != nil && p.Type == intstr.String && p.StrVal == "100%"
	lowered := controlled && p != nil && cloneSetStableCount(p, cloneSetReplicas(cs)) < cloneSetReplicas(cs)
	if !frozen && !lowered {
		setNested(patch, "100%", cloneSetPartitionPath...)
	}
	if cs.Spec.UpdateStrategy.Paused {
		setNested(patch, false, "spec", "updateStrategy", "paused")
	}
	return patch
}

// cloneSetBatchPatch lowers the partition to the number of pods to keep; it never raises it.
func cloneSetBatchPatch(cs *kruiseappsv1alpha1.CloneSet, desiredUpdated int32, abort bool) map[string]any {
	replicas := cloneSetReplicas(cs)
	target := replicas - upTo(desiredUpdated, replicas)
	p := cs.Spec.UpdateStrategy.Partition
	// An aborted release raises the partition: the CloneSet takes its updated pods back to the stable revision.
	if p == nil || cloneSetStableCount(p, replicas) == target || (!abort && cloneSetStableCount(p, replicas) < target) {
		return nil
	}
	patch := map[string]any{}
	setNested(patch, int64(target), cloneSetPartitionPath...)
	return patch
}

// cloneSetFinalizePatch releases the CloneSet (partition and pause off, control-info gone), or only drops
// control-info when a cancelled release keeps it frozen.
func cloneSetFinalizePatch(cs *kruiseappsv1alpha1.CloneSet, t Target) map[string]any {
	if controlledByOther(cs.Annotations, t.Owner) {
		return nil
	}
	patch := map[string]any{}
	if _, ok := cs.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]; ok {
		setNested(patch, nil, "metadata", "annotations", rolloutsv1beta1.BatchReleaseControlAnnotation)
	}
	if keepsFrozen(t) {
		return patch
	}
	// A defaulted partition of 0 holds nothing back; removing it again would patch forever.
	if p := cs.Spec.UpdateStrategy.Partition; p != nil && cloneSetStableCount(p, cloneSetReplicas(cs)) > 0 {
		setNested(patch, nil, cloneSetPartitionPath...)
	}
	if cs.Spec.UpdateStrategy.Paused {
		setNested(patch, false, "spec", "updateStrategy", "paused")
	}
	return patch
}

// cloneSetResumed reports whether a released CloneSet runs its update revision on every pod.
func cloneSetResumed(cs *kruiseappsv1alpha1.CloneSet) bool {
	replicas := cloneSetReplicas(cs)
	s := cs.Status
	return s.ObservedGeneration >= cs.Generation && s.UpdatedReplicas >= replicas && s.UpdatedReadyReplicas >= replicas
}
