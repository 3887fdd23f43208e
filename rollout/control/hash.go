package control

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// ComputeHash is the pod-template-hash kube-controller-manager gives the ReplicaSet of a Deployment pod
// template: FNV-32a over the spew dump of the template, then the collision count (when set) as eight
// little-endian bytes, written as a safe-encoded decimal. The dump includes unexported fields, so hash a
// template as decoded from the API, before anything formats its quantities.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	if template == nil {
		template = &corev1.PodTemplateSpec{}
	}
	hasher := fnv.New32a()
	_, _ = fmt.Fprintf(hasher, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		buf := make([]byte, 8)
		binary.LittleEndian.PutUint32(buf, uint32(*collisionCount)) //nolint:gosec // kcm hashes the bit pattern
		_, _ = hasher.Write(buf)
	}
	return rand.SafeEncodeString(fmt.Sprint(hasher.Sum32()))
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
