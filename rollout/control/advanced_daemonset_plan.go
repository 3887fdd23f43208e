package control

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// rollingUpdatePausedPath is where an Advanced DaemonSet (or StatefulSet) is paused; partitionPath is beside it.
var rollingUpdatePausedPath = []string{"spec", "updateStrategy", "rollingUpdate", "paused"}

// advancedDaemonSetInfo builds the WorkloadInfo from the DaemonSet's status and its active pods: the update
// revision is status.daemonSetHash, the pods' controller-revision-hash, and the stable one the revision most
// old pods run (the status names none).
func advancedDaemonSetInfo(ds *kruiseappsv1alpha1.DaemonSet, pods []corev1.Pod, t Target) *WorkloadInfo {
	key := rolloutsv1beta1.ControllerRevisionHashLabelKey
	update := ds.Status.DaemonSetHash
	sel, err := workloadSelector(ds.Spec.Selector)
	if err != nil {
		sel = labels.Nothing()
	}
	return &WorkloadInfo{
		Object:               ds,
		Replicas:             ds.Status.DesiredNumberScheduled,
		UpdatedReplicas:      ds.Status.UpdatedNumberScheduled,
		UpdatedReadyReplicas: countReady(podsOfRevision(pods, key, update)),
		StableRevision:       commonOldRevision(pods, update),
		UpdateRevision:       update,
		RevisionLabelKey:     key,
		UpdatedPods:          revisionSelector(sel, key, update),
		PodsRecreated:        !updatesInPlace(ds),
		Consistent:           ds.Status.ObservedGeneration >= ds.Generation,
		Controlled:           ControlledBy(ds.Annotations, t.Owner),
	}
}

// updatesInPlace reports whether the DaemonSet may update its pods in place, so that an updated pod may
// be one that was Ready before its update.
func updatesInPlace(ds *kruiseappsv1alpha1.DaemonSet) bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	return ru != nil && ru.Type == kruiseappsv1alpha1.InplaceRollingUpdateType
}

// advancedDaemonSetPartition is the number of nodes the partition keeps on old revisions: an integer as
// written, a percentage of desiredNumberScheduled rounded up; none keeps none. An unreadable partition
// counts as frozen, so that it never lets a batch go backwards.
func advancedDaemonSetPartition(ds *kruiseappsv1alpha1.DaemonSet) (int32, bool) {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.Partition == nil {
		return 0, false
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(ru.Partition, int(ds.Status.DesiredNumberScheduled), true)
	if err != nil {
		return frozenPartition, true
	}
	return toInt32(int64(n)), true
}

func advancedDaemonSetPaused(ds *kruiseappsv1alpha1.DaemonSet) bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	return ru != nil && ru.Paused != nil && *ru.Paused
}

// advancedDaemonSetInitPatch takes control: the rollout is unpaused and frozen with a partition of
// desiredNumberScheduled, as upstream writes it (the webhook's 32767 until the DaemonSet's controller has
// counted its nodes). A partition this release already lowered is kept, so a repeated Initialize never moves
// the release backwards.
func advancedDaemonSetInitPatch(ds *kruiseappsv1alpha1.DaemonSet, t Target) map[string]any {
	patch := map[string]any{}
	controlled := ControlledBy(ds.Annotations, t.Owner)
	if !controlled {
		setNested(patch, ControlInfo(t.Owner), "metadata", "annotations", rolloutsv1beta1.BatchReleaseControlAnnotation)
	}
	frozen := int64(frozenPartition)
	if desired := ds.Status.DesiredNumberScheduled; desired > 0 {
		frozen = int64(desired)
	}
	current, set := advancedDaemonSetPartition(ds)
	kept := set && (int64(current) == frozen || (controlled && int64(current) < frozen))
	if !kept {
		setNested(patch, frozen, partitionPath...)
	}
	if advancedDaemonSetPaused(ds) {
		setNested(patch, false, rollingUpdatePausedPath...)
	}
	return patch
}

// advancedDaemonSetBatchPatch lowers the partition so that desiredUpdated nodes run the update revision; it
// never raises it. Until the DaemonSet's controller has counted its nodes there is nothing to count against:
// a partition of 0 then would release every node at once.
func advancedDaemonSetBatchPatch(ds *kruiseappsv1alpha1.DaemonSet, desiredUpdated int32) map[string]any {
	desired := ds.Status.DesiredNumberScheduled
	if desired <= 0 {
		return nil
	}
	target := desired - upTo(desiredUpdated, desired)
	current, set := advancedDaemonSetPartition(ds)
	if !set || current <= target {
		return nil
	}
	patch := map[string]any{}
	setNested(patch, int64(target), partitionPath...)
	return patch
}

// advancedDaemonSetFinalizePatch releases the DaemonSet (partition and pause off, control-info gone), or
// only drops control-info when a cancelled release keeps it frozen. A DaemonSet another release controls is
// left alone.
func advancedDaemonSetFinalizePatch(ds *kruiseappsv1alpha1.DaemonSet, t Target) map[string]any {
	if controlledByOther(ds.Annotations, t.Owner) {
		return nil
	}
	patch := map[string]any{}
	if _, ok := ds.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]; ok {
		setNested(patch, nil, "metadata", "annotations", rolloutsv1beta1.BatchReleaseControlAnnotation)
	}
	if keepsFrozen(t) {
		return patch
	}
	// A partition of 0 holds nothing back; removing it again would patch forever.
	if n, set := advancedDaemonSetPartition(ds); set && n > 0 {
		setNested(patch, nil, partitionPath...)
	}
	if advancedDaemonSetPaused(ds) {
		setNested(patch, false, rollingUpdatePausedPath...)
	}
	return patch
}

// advancedDaemonSetResumed reports whether a released DaemonSet runs its current template, available, on
// every node that should run it; an OnDelete DaemonSet never rolls by itself, so there is nothing to wait for.
func advancedDaemonSetResumed(ds *kruiseappsv1alpha1.DaemonSet) bool {
	if ds.Spec.UpdateStrategy.Type == kruiseappsv1alpha1.OnDeleteDaemonSetStrategyType {
		return true
	}
	s := ds.Status
	return s.ObservedGeneration >= ds.Generation &&
		s.UpdatedNumberScheduled >= s.DesiredNumberScheduled && s.NumberAvailable >= s.DesiredNumberScheduled
}
