package control

import (
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// deploymentRevisionAnnotation is the revision number kube-controller-manager stamps on ReplicaSets.
const deploymentRevisionAnnotation = "deployment.kubernetes.io/revision"

// canaryTemplate is the pod template a canary Deployment runs: the stable one with the plan's metadata
// merged in.
func canaryTemplate(stable *appsv1.Deployment, patch *rolloutsv1beta1.PatchPodTemplateMetadata) *corev1.PodTemplateSpec {
	t := stable.Spec.Template.DeepCopy()
	delete(t.Labels, rolloutsv1beta1.PodTemplateHashLabelKey)
	if patch == nil {
		return t
	}
	if len(patch.Labels) > 0 {
		t.Labels = mergeStrings(t.Labels, patch.Labels)
	}
	if len(patch.Annotations) > 0 {
		t.Annotations = mergeStrings(t.Annotations, patch.Annotations)
	}
	return t
}

func mergeStrings(base, extra map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(extra))
	maps.Copy(out, base)
	maps.Copy(out, extra)
	return out
}

// newCanaryDeployment is the canary Deployment to create for stable: owned by the BatchRelease, held by a
// finalizer until the release is finalised, and started at zero replicas.
func newCanaryDeployment(stable *appsv1.Deployment, t Target) *appsv1.Deployment {
	spec := *stable.Spec.DeepCopy()
	spec.Replicas = new(int32)
	spec.Paused = false
	spec.Template = *canaryTemplate(stable, t.Plan.PatchPodTemplateMetadata)
	objLabels := mergeStrings(stable.Labels, map[string]string{rolloutsv1beta1.CanaryDeploymentLabel: stable.Name})
	// The workload-type label would put the canary under the workload webhook as if it were released itself.
	delete(objLabels, rolloutsv1beta1.WorkloadTypeLabel)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    stable.Name + "-",
			Namespace:       stable.Namespace,
			Labels:          objLabels,
			Annotations:     map[string]string{rolloutsv1beta1.BatchReleaseControlAnnotation: ControlInfo(t.Owner)},
			OwnerReferences: []metav1.OwnerReference{t.Owner},
			Finalizers:      []string{rolloutsv1beta1.CanaryDeploymentFinalizer},
		},
		Spec: spec,
	}
}

// releaseCanaries keeps the canary Deployments of this release.
func releaseCanaries(list []appsv1.Deployment, owner metav1.OwnerReference) []appsv1.Deployment {
	var out []appsv1.Deployment
	for _, d := range list {
		if ControlledBy(d.Annotations, owner) {
			out = append(out, d)
		}
	}
	return out
}

// matchingCanary is the oldest live canary running want; canaries of an earlier template of the same
// release do not count.
func matchingCanary(canaries []appsv1.Deployment, want *corev1.PodTemplateSpec) *appsv1.Deployment {
	var found *appsv1.Deployment
	for i := range canaries {
		d := &canaries[i]
		if d.DeletionTimestamp != nil || !EqualIgnoreHash(&d.Spec.Template, want) {
			continue
		}
		if found == nil || d.CreationTimestamp.Before(&found.CreationTimestamp) ||
			(d.CreationTimestamp.Equal(&found.CreationTimestamp) && d.Name < found.Name) {
			found = d
		}
	}
	return found
}

// canaryScalePatch scales the canary up to desired; it scales down only for an aborted release.
func canaryScalePatch(canary *appsv1.Deployment, desired int32, abort bool) map[string]any {
	if r := canary.Spec.Replicas; r != nil && (*r == desired || (!abort && *r > desired)) {
		return nil
	}
	return map[string]any{"spec": map[string]any{"replicas": int64(max(desired, 0))}}
}

// stableFinalizePatch drops control-info and resumes the stable Deployment when the release completes; a
// release stopped at a batch leaves it paused.
func stableFinalizePatch(stable *appsv1.Deployment, t Target) map[string]any {
	if controlledByOther(stable.Annotations, t.Owner) {
		return nil
	}
	patch := map[string]any{}
	if _, ok := stable.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]; ok {
		setNested(patch, nil, "metadata", "annotations", rolloutsv1beta1.BatchReleaseControlAnnotation)
	}
	if t.Plan.BatchPartition == nil && stable.Spec.Paused {
		setNested(patch, false, "spec", "paused")
	}
	return patch
}

func canaryStableReplicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return max(*d.Spec.Replicas, 0)
}

// stableRolledOut reports whether the stable Deployment runs only its current template, all available.
func stableRolledOut(d *appsv1.Deployment) bool {
	replicas := canaryStableReplicas(d)
	s := d.Status
	return !d.Spec.Paused && s.ObservedGeneration >= d.Generation &&
		s.UpdatedReplicas == replicas && s.Replicas == replicas && s.AvailableReplicas >= replicas
}

// ownedReplicaSets keeps the ReplicaSets d controls.
func ownedReplicaSets(rss []appsv1.ReplicaSet, d *appsv1.Deployment) []appsv1.ReplicaSet {
	var out []appsv1.ReplicaSet
	for _, rs := range rss {
		if controlledByUID(rs.OwnerReferences, d) {
			out = append(out, rs)
		}
	}
	return out
}

func rsRevision(rs *appsv1.ReplicaSet) int64 {
	n, _ := strconv.ParseInt(rs.Annotations[deploymentRevisionAnnotation], 10, 64)
	return n
}

// deploymentStableRevision is the pod-template-hash of the pods the stable Deployment runs besides its
// current template: the stable-revision label when set, else the old ReplicaSet with the most replicas.
// With no old ReplicaSet left the current one is stable; with none at all, update.
func deploymentStableRevision(d *appsv1.Deployment, rss []appsv1.ReplicaSet, update string) string {
	if rev := d.Labels[rolloutsv1beta1.DeploymentStableRevisionLabel]; rev != "" {
		return rev
	}
	var best, current *appsv1.ReplicaSet
	owned := ownedReplicaSets(rss, d)
	for i := range owned {
		rs := &owned[i]
		if EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			current = rs
			continue
		}
		if best == nil || rsReplicas(rs) > rsReplicas(best) ||
			(rsReplicas(rs) == rsReplicas(best) && rsRevision(rs) > rsRevision(best)) {
			best = rs
		}
	}
	switch {
	case best != nil:
		return best.Labels[rolloutsv1beta1.PodTemplateHashLabelKey]
	case current != nil:
		return current.Labels[rolloutsv1beta1.PodTemplateHashLabelKey]
	default:
		return update
	}
}

func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// canaryPodHash is the pod-template-hash of the canary's pods: its ReplicaSet's label, or the hash
// kube-controller-manager will give it before that ReplicaSet exists.
func canaryPodHash(canary *appsv1.Deployment, rss []appsv1.ReplicaSet) string {
	for _, rs := range ownedReplicaSets(rss, canary) {
		if h := rs.Labels[rolloutsv1beta1.PodTemplateHashLabelKey]; h != "" && EqualIgnoreHash(&rs.Spec.Template, &canary.Spec.Template) {
			return h
		}
	}
	return ComputeHash(&canary.Spec.Template, canary.Status.CollisionCount)
}

// canaryInfo builds the WorkloadInfo of a canary-style release; canary is nil before the first batch.
func canaryInfo(stable, canary *appsv1.Deployment, rss []appsv1.ReplicaSet, t Target) *WorkloadInfo {
	update := ComputeHash(&stable.Spec.Template, nil)
	info := &WorkloadInfo{
		Object:           stable,
		Replicas:         canaryStableReplicas(stable),
		StableRevision:   deploymentStableRevision(stable, rss, update),
		UpdateRevision:   update,
		RevisionLabelKey: rolloutsv1beta1.PodTemplateHashLabelKey,
		UpdatedPods:      labels.Nothing(),
		Consistent:       stable.Status.ObservedGeneration >= stable.Generation,
		Controlled:       ControlledBy(stable.Annotations, t.Owner),
	}
	if canary == nil {
		return info
	}
	info.UpdatedReplicas = canary.Status.Replicas
	info.UpdatedReadyReplicas = canary.Status.AvailableReplicas
	info.Consistent = info.Consistent && canary.Status.ObservedGeneration >= canary.Generation
	if sel, err := workloadSelector(canary.Spec.Selector); err == nil {
		// The canary shares the stable selector; its pod-template-hash tells its pods apart.
		info.UpdatedPods = revisionSelector(sel, rolloutsv1beta1.PodTemplateHashLabelKey, canaryPodHash(canary, rss))
	}
	return info
}
