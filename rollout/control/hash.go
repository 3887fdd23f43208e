package control

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/revision"
)

// ComputeHash is the pod-template-hash kube-controller-manager gives the ReplicaSet of a Deployment pod
// template (revision.TemplateHash).
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	return revision.TemplateHash(template, collisionCount)
}

// EqualIgnoreHash reports whether two pod templates are semantically equal once their pod-template-hash
// labels are dropped: the test kube-controller-manager uses to find a Deployment's new ReplicaSet.
func EqualIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	if a == nil || b == nil {
		return a == b
	}
	return equality.Semantic.DeepEqual(withLabels(a, withoutHash(a.Labels)), withLabels(b, withoutHash(b.Labels)))
}

// withoutHash is labels without the pod-template-hash label; labels itself when it has none.
func withoutHash(labels map[string]string) map[string]string {
	if _, ok := labels[rolloutsv1beta1.PodTemplateHashLabelKey]; !ok {
		return labels
	}
	out := maps.Clone(labels)
	delete(out, rolloutsv1beta1.PodTemplateHashLabelKey)
	return out
}

// withLabels is a shallow copy of t with labels: a comparison that ignores some labels need not copy the
// whole template (the spec is only read).
func withLabels(t *corev1.PodTemplateSpec, labels map[string]string) *corev1.PodTemplateSpec {
	c := *t
	c.Labels = labels
	return &c
}
