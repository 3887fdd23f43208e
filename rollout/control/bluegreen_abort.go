package control

// An aborted blue-green release (its analysis failed; the engine has taken the traffic back to the stable
// revision) takes its new pods away and leaves the workload frozen the way the release found it at its start:
// the new revision held back (a paused Deployment, a CloneSet partition of "100%") with its old pods all
// running. The template stays as the user wrote it, so GitOps stays in sync; a retry's first batch surges
// again, a revert in Git finalises the release as a rollback, which restores the saved settings.

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// abortWrite is one write to one object; a nil obj writes nothing.
type abortWrite struct {
	obj   client.Object
	patch map[string]any
}

// deploymentBlueGreenAbort is the next write that takes an aborted release's new pods away from d, one per
// call, each once kube-controller-manager has seen the one before:
//  1. pause d, once its ReplicaSets hold what its surge allows: the controller scales the ReplicaSets of a
//     paused Deployment in proportion whenever their total differs from replicas plus maxSurge, so pausing
//     during a surge would scale the stable ReplicaSet as well;
//  2. scale the new ReplicaSet to 0: with the stable ReplicaSet the only one active, a paused Deployment
//     leaves it at spec.replicas and runs no new pod.
//
// The surge stays; a retry's first batch resets it (deploymentBlueGreenUpgradePatch).
func deploymentBlueGreenAbort(d *appsv1.Deployment, rss []appsv1.ReplicaSet) abortWrite {
	newRS, _ := SplitReplicaSets(d, rss)
	switch {
	case !deploymentObserved(d, rss):
		return abortWrite{}
	case !d.Spec.Paused && surgeSettled(d, rss, newRS):
		patch := map[string]any{}
		setNested(patch, true, "spec", "paused")
		return abortWrite{obj: d, patch: patch}
	case d.Spec.Paused && newRS != nil && rsReplicas(newRS) > 0:
		patch := map[string]any{}
		setNested(patch, int64(0), "spec", "replicas")
		return abortWrite{obj: newRS, patch: patch}
	}
	return abortWrite{}
}

// deploymentObserved: kube-controller-manager has seen d and every ReplicaSet as read. Its Deployment and
// ReplicaSet controllers share one cache, so a ReplicaSet the latter observed is in the former's view too.
func deploymentObserved(d *appsv1.Deployment, rss []appsv1.ReplicaSet) bool {
	if d.Status.ObservedGeneration < d.Generation {
		return false
	}
	for i := range rss {
		if rss[i].Status.ObservedGeneration < rss[i].Generation {
			return false
		}
	}
	return true
}

// surgeSettled: d's ReplicaSets hold exactly replicas plus the surge, or only one of them is active (the
// controller then keeps that one at spec.replicas), so pausing d scales none of them.
func surgeSettled(d *appsv1.Deployment, rss []appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) bool {
	if newRS == nil || rsReplicas(newRS) == 0 {
		return true
	}
	var total int32
	for i := range rss {
		total += rsReplicas(&rss[i])
	}
	replicas := partitionReplicasOf(d)
	var surge *intstr.IntOrString
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		surge = ru.MaxSurge
	}
	return total == replicas+surgeCount(surge, replicas)
}

// newReplicaSetIdle: d's new ReplicaSet runs no pod, as the ReplicaSet controller has seen (or there is none
// yet): a batch's surge is then all new pods, and may be lower than a former batch's (a retry after an abort).
func newReplicaSetIdle(d *appsv1.Deployment, rss []appsv1.ReplicaSet) bool {
	newRS, _ := SplitReplicaSets(d, rss)
	return newRS == nil || rsReplicas(newRS) == 0 && newRS.Status.Replicas == 0 &&
		newRS.Status.ObservedGeneration >= newRS.Generation
}

// cloneSetBlueGreenAbortPatch freezes cs again as the workload webhook and Initialize left it: partition
// "100%", so the CloneSet wants no pod of the new revision and drops its surge pods, and a surge of one, so
// a retry's first batch surges only its own pods.
func cloneSetBlueGreenAbortPatch(cs *kruiseappsv1alpha1.CloneSet) map[string]any {
	us := cs.Spec.UpdateStrategy
	patch := map[string]any{}
	if p := us.Partition; p == nil || cloneSetStableCount(p, cloneSetReplicas(cs)) < cloneSetReplicas(cs) {
		setNested(patch, "100%", cloneSetPartitionPath...)
	}
	if us.MaxSurge == nil || *us.MaxSurge != intstr.FromInt32(1) {
		setNested(patch, intstr.FromInt32(1), append(cloneSetStrategyPath, "maxSurge")...)
	}
	return patch
}

// abort freezes the CloneSet again, then, once its controller has seen that, evicts the new pods it still
// runs: Flotilla's CloneSet controller deletes surge pods beyond the partition itself, the eviction makes
// sure of it whichever controller runs the CloneSet (the partition-style control's way, backOut).
func (b *cloneSetBlueGreen) abort(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet) error {
	if err := cloneSetBlueGreenControlled(cs, b.t); err != nil {
		return err
	}
	if patch := cloneSetBlueGreenAbortPatch(cs); len(patch) > 0 {
		return applyMergePatch(ctx, b.c, cs, patch)
	}
	info := cloneSetInfo(cs, b.t)
	if !info.Consistent || info.UpdateRevision == info.StableRevision {
		return nil
	}
	sel, err := workloadSelector(cs.Spec.Selector)
	if err != nil {
		return err
	}
	return backOut(ctx, b.c, backOutTarget{Owner: cs, Replicas: info.Replicas, Pods: sel, Updated: info.UpdatedPods})
}

// cloneSetBlueGreenControlled refuses to abort a CloneSet another release (or none) controls.
func cloneSetBlueGreenControlled(cs *kruiseappsv1alpha1.CloneSet, t Target) error {
	if !ControlledBy(cs.Annotations, t.Owner) {
		return notReady("CloneSet", cs.Namespace, cs.Name, "annotation %s does not name this release", rolloutsv1beta1.BatchReleaseControlAnnotation)
	}
	return nil
}
