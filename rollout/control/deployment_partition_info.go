package control

import (
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// partitionDeploymentInfo is the release state of d, counted on the ReplicaSets it controls.
func partitionDeploymentInfo(d *appsv1.Deployment, sets []appsv1.ReplicaSet, owner metav1.OwnerReference) (*WorkloadInfo, error) {
	newRS, oldRSs := SplitReplicaSets(d, sets)
	info := &WorkloadInfo{
		Object:           d,
		Replicas:         partitionReplicasOf(d),
		RevisionLabelKey: rolloutsv1beta1.PodTemplateHashLabelKey,
		Consistent:       d.Status.ObservedGeneration >= d.Generation || PartitionHeld(d) || heldForRelease(d),
		Controlled:       ControlledBy(d.Annotations, owner),
		PodsRecreated:    true,
	}
	if newRS != nil {
		info.UpdatedReplicas, info.UpdatedReadyReplicas = newRS.Status.Replicas, newRS.Status.ReadyReplicas
	}
	update := updateRevision(d, newRS)
	info.UpdateRevision = update
	info.StableRevision = partitionStableRevision(d, oldRSs, update)
	selector, err := partitionUpdatedPods(d, update)
	if err != nil {
		return nil, err
	}
	info.UpdatedPods = selector
	return info, nil
}

// updateRevision is the pod-template-hash of d's template: the new ReplicaSet's label when there is one (a
// ReplicaSet found again after a rollback keeps the hash it was created with), else computed, as
// kube-controller-manager would name the ReplicaSet it creates (once per generation: templateHash).
func updateRevision(d *appsv1.Deployment, newRS *appsv1.ReplicaSet) string {
	if newRS != nil {
		if h := newRS.Labels[rolloutsv1beta1.PodTemplateHashLabelKey]; h != "" {
			return h
		}
	}
	return templateHash(d)
}

// PartitionHeld reports whether a partition-style release holds d: paused with strategy Recreate and a
// control-info annotation. Every count of a held Deployment is read from its ReplicaSets, and
// kube-controller-manager only copies status, so its observedGeneration says nothing the release needs; yet
// each annotation write (the partition, the extra status) bumps a Deployment's generation, and waiting for it
// to be observed would pace every batch on kube-controller-manager's status sync.
func PartitionHeld(d *appsv1.Deployment) bool {
	return d.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation] != "" && d.Spec.Paused &&
		d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType
}

// heldForRelease: the workload webhook paused d for a release (its in-progressing mark), so the template change
// that bumped d's generation came with the pause. Paused, kube-controller-manager makes no ReplicaSet for the new
// template and rolls nothing; a release counts on the ReplicaSets and reads the spec, so kube-controller-manager's
// observedGeneration tells it nothing, and with a thousand Deployments changed at once waiting for it delayed
// every start by that controller's backlog.
func heldForRelease(d *appsv1.Deployment) bool {
	return d.Spec.Paused && d.Annotations[rolloutsv1beta1.InProgressingAnnotation] != ""
}

// SplitReplicaSets returns the new ReplicaSet of d (the oldest whose template equals d's, ignoring the
// hash label, as kube-controller-manager picks it, and the batch labels stamped on it; nil when there is
// none) and the others. d and sets are objects as stored (isNewReplicaSet).
func SplitReplicaSets(d *appsv1.Deployment, sets []appsv1.ReplicaSet) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	sorted := make([]*appsv1.ReplicaSet, 0, len(sets))
	for i := range sets {
		sorted = append(sorted, &sets[i])
	}
	sort.SliceStable(sorted, func(i, j int) bool { return partitionOlderRS(sorted[i], sorted[j]) })
	var newRS *appsv1.ReplicaSet
	old := make([]*appsv1.ReplicaSet, 0, len(sorted))
	for _, rs := range sorted {
		if newRS == nil && isNewReplicaSet(rs, d) {
			newRS = rs
			continue
		}
		old = append(old, rs)
	}
	return newRS, old
}

// partitionOlderRS orders by creation time, then name.
func partitionOlderRS(a, b *appsv1.ReplicaSet) bool {
	if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.Name < b.Name
	}
	return a.CreationTimestamp.Before(&b.CreationTimestamp)
}

// partitionOwnedReplicaSets keeps the ReplicaSets whose controller is d.
func partitionOwnedReplicaSets(d *appsv1.Deployment, sets []appsv1.ReplicaSet) []appsv1.ReplicaSet {
	owned := make([]appsv1.ReplicaSet, 0, len(sets))
	for i := range sets {
		if ref := metav1.GetControllerOf(&sets[i]); ref != nil && ref.UID == d.UID {
			owned = append(owned, sets[i])
		}
	}
	return owned
}

// partitionStableRevision is the stable-revision label the workload webhook writes, else the hash of the old
// ReplicaSet running the most pods (the newest on a tie), else the update revision: with no old pods
// there is nothing else to call stable.
func partitionStableRevision(d *appsv1.Deployment, old []*appsv1.ReplicaSet, update string) string {
	if rev := d.Labels[rolloutsv1beta1.DeploymentStableRevisionLabel]; rev != "" {
		return rev
	}
	var best *appsv1.ReplicaSet
	for _, rs := range old { // oldest first, so >= prefers the newest on a tie
		if rs.Spec.Replicas != nil && *rs.Spec.Replicas > 0 && (best == nil || *rs.Spec.Replicas >= *best.Spec.Replicas) {
			best = rs
		}
	}
	if best == nil || best.Labels[rolloutsv1beta1.PodTemplateHashLabelKey] == "" {
		return update
	}
	return best.Labels[rolloutsv1beta1.PodTemplateHashLabelKey]
}

// partitionUpdatedPods is d's selector narrowed to the pods of the update revision.
func partitionUpdatedPods(d *appsv1.Deployment, update string) (labels.Selector, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s selector: %w", d.Namespace, d.Name, err)
	}
	req, err := labels.NewRequirement(rolloutsv1beta1.PodTemplateHashLabelKey, selection.Equals, []string{update})
	if err != nil {
		return nil, fmt.Errorf("pod-template-hash %q: %w", update, err)
	}
	return selector.Add(*req), nil
}
