package deployment

import (
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
)

// Annotations kube-controller-manager keeps on a Deployment's ReplicaSets.
const (
	revisionAnnotation        = "deployment.kubernetes.io/revision"
	revisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	desiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	maxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	rollbackToAnnotation      = "deprecated.deployment.rollback.to"
)

// notCopied are the Deployment annotations kube-controller-manager does not copy to a new ReplicaSet.
var notCopied = map[string]bool{
	corev1.LastAppliedConfigAnnotation: true,
	revisionAnnotation:                 true,
	revisionHistoryAnnotation:          true,
	desiredReplicasAnnotation:          true,
	maxReplicasAnnotation:              true,
	rollbackToAnnotation:               true,
}

// deploymentReplicas is spec.replicas with the API default of 1.
func deploymentReplicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// planInput is the plan's view of d, its new ReplicaSet (nil when missing) and the old ones (oldest
// first).
func planInput(d *appsv1.Deployment, s rolloutsv1beta1.DeploymentStrategy, newRS *appsv1.ReplicaSet,
	old []*appsv1.ReplicaSet) Input {
	in := Input{Replicas: deploymentReplicas(d), Strategy: s, Old: make([]ReplicaSetState, 0, len(old)),
		PodLabels: control.BatchPodLabelsFrom(d.Annotations), Aborted: d.Annotations[control.ReleaseAbortedAnnotation] == "true"}
	if newRS != nil {
		state := replicaSetState(newRS)
		state.Stamped = control.StampedBatchLabels(&newRS.Spec.Template, &d.Spec.Template)
		state.Settled = newRS.Status.ObservedGeneration >= newRS.Generation && newRS.Status.Replicas == state.Replicas
		in.New = &state
	}
	for _, rs := range old {
		in.Old = append(in.Old, replicaSetState(rs))
	}
	return in
}

func replicaSetState(rs *appsv1.ReplicaSet) ReplicaSetState {
	s := ReplicaSetState{
		Name:            rs.Name,
		Running:         rs.Status.Replicas,
		Ready:           rs.Status.ReadyReplicas,
		Available:       rs.Status.AvailableReplicas,
		DesiredReplicas: int32Annotation(rs.Annotations, desiredReplicasAnnotation),
		MaxReplicas:     int32Annotation(rs.Annotations, maxReplicasAnnotation),
	}
	if rs.Spec.Replicas != nil {
		s.Replicas = *rs.Spec.Replicas
	}
	return s
}

// int32Annotation parses a non-negative int32 annotation; nil when absent or invalid, as
// kube-controller-manager ignores such values.
func int32Annotation(annotations map[string]string, key string) *int32 {
	v, err := strconv.ParseUint(annotations[key], 10, 31)
	if err != nil {
		return nil
	}
	n := int32(v) //nolint:gosec // at most 31 bits
	return &n
}

// newReplicaSet is the new ReplicaSet of d as kube-controller-manager would create it: named after the
// pod-template-hash, selecting on it, controlled by d, with d's annotations (but the ones it skips),
// the next revision and the replica annotations of the plan. The step's batch labels are stamped on its
// pod template only.
func newReplicaSet(d *appsv1.Deployment, old []*appsv1.ReplicaSet, step Step, p Plan) *appsv1.ReplicaSet {
	hash := control.ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	template := d.Spec.Template.DeepCopy()
	template.Labels = withLabel(template.Labels, rolloutsv1beta1.PodTemplateHashLabelKey, hash)
	labels := template.Labels
	if step.Relabel && len(step.Labels) > 0 {
		template.Labels = maps.Clone(labels)
		maps.Copy(template.Labels, step.Labels)
	}
	replicas := step.To
	selector := d.Spec.Selector.DeepCopy()
	if selector == nil {
		selector = &metav1.LabelSelector{}
	}
	selector.MatchLabels = withLabel(selector.MatchLabels, rolloutsv1beta1.PodTemplateHashLabelKey, hash)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            replicaSetName(d.Name, hash),
			Namespace:       d.Namespace,
			Labels:          labels,
			Annotations:     newReplicaSetAnnotations(d, old, p),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        &replicas,
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        *template,
		},
	}
}

func newReplicaSetAnnotations(d *appsv1.Deployment, old []*appsv1.ReplicaSet, p Plan) map[string]string {
	annotations := map[string]string{}
	for k, v := range d.Annotations {
		if !notCopied[k] {
			annotations[k] = v
		}
	}
	annotations[revisionAnnotation] = strconv.FormatInt(maxRevision(old)+1, 10)
	annotations[desiredReplicasAnnotation] = strconv.Itoa(int(p.DesiredReplicas))
	annotations[maxReplicasAnnotation] = strconv.Itoa(int(p.MaxReplicas))
	return annotations
}

// maxRevision is the highest revision annotation among sets; unparsable ones are skipped.
func maxRevision(sets []*appsv1.ReplicaSet) int64 {
	var highest int64
	for _, rs := range sets {
		if v, err := strconv.ParseInt(rs.Annotations[revisionAnnotation], 10, 64); err == nil && v > highest {
			highest = v
		}
	}
	return highest
}

// replicaSetName is "<deployment>-<hash>", the Deployment name truncated to keep the result a valid
// object name, as kube-controller-manager names it.
func replicaSetName(deployment, hash string) string {
	limit := validation.DNS1123SubdomainMaxLength - 1 - len(hash)
	if len(deployment) > limit && limit > 0 {
		deployment = deployment[:limit]
	}
	return deployment + "-" + hash
}

func withLabel(m map[string]string, key, value string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	out[key] = value
	return out
}
