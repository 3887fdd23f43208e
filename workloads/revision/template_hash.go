package revision

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// TemplateHash is the hash kube-controller-manager gives a pod template: a Deployment's ReplicaSets and a
// DaemonSet's (and upstream's Advanced DaemonSet's) revisions are named after it. FNV-32a over the spew dump
// of the template, then the collision count (when set) as eight little-endian bytes, written as a
// safe-encoded decimal. The dump includes unexported fields, so hash a template as decoded from the API,
// before anything formats its quantities. The dump also follows the Go types: a template hashes
// differently under another k8s.io/api version, so a workload finds its current revision by its data and
// hashes only a template no revision records (NewHashed).
func TemplateHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
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

// NewHashed builds the revision a workload creates whose revisions are named after a template hash rather
// than their data (a DaemonSet, TemplateHash): "<owner>-<hash>", labelled with the template labels and
// hashLabel=hash (the label its pods carry), with the owner's annotations, controlled by the owner.
func NewHashed(owner metav1.Object, ownerGVK schema.GroupVersionKind, templateLabels map[string]string, data []byte,
	revision int64, hashLabel, hash string) (*appsv1.ControllerRevision, error) {
	if isNil(owner) {
		return nil, ErrNilOwner
	}
	labels := make(map[string]string, len(templateLabels)+1)
	maps.Copy(labels, templateLabels)
	labels[hashLabel] = hash
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            Name(owner.GetName(), hash),
			Namespace:       owner.GetNamespace(),
			Labels:          labels,
			Annotations:     copyMap(owner.GetAnnotations()),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, ownerGVK)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: revision,
	}, nil
}
