package plan

import (
	"bytes"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/controllerref"
)

// TimestampAnnotation records when the copy was last written (upstream's key; its documentation shows Go's
// time.Time.String form, which this writes in UTC).
const TimestampAnnotation = "kruise.io/resourcedistribution.resource.distributed.timestamp"

// Kind is the ResourceDistribution's kind, as the copies' controller references name it.
var Kind = kruiseappsv1alpha1.GroupVersion.WithKind("ResourceDistribution")

// Controller is the name of the ResourceDistribution that controls obj, "" if none does. Upstream decides
// ownership by the controller reference's kind and name; the annotations are only a record.
func Controller(obj metav1.Object) string {
	if ref := controllerref.Of(obj, Kind.GroupKind()); ref != nil {
		return ref.Name
	}
	return ""
}

// NewCopy is the copy of res that rd wants in namespace ns: res's content and metadata, the labels,
// annotations and finalizers old (the copy there now, nil if none) has that res does not set, and rd's
// controller reference and annotations. It carries old's resourceVersion, so that an update made from a stale
// read conflicts instead of undoing a newer write.
func NewCopy(rd *kruiseappsv1alpha1.ResourceDistribution, res *Resource, ns string, old client.Object, now time.Time) client.Object {
	obj, _ := res.Object.DeepCopyObject().(client.Object)
	clearServerFields(obj)
	obj.SetNamespace(ns)
	if old != nil {
		mergeMetadata(obj, old)
		obj.SetResourceVersion(old.GetResourceVersion())
	}
	obj.SetOwnerReferences(ownedBy(obj.GetOwnerReferences(), rd))
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[kruiseappsv1alpha1.ResourceDistributionHashCodeAnnotation] = res.Hash
	annotations[kruiseappsv1alpha1.ResourceDistributionSourceAnnotation] = rd.Name
	annotations[TimestampAnnotation] = now.UTC().Round(0).String()
	obj.SetAnnotations(annotations)
	return obj
}

// clearServerFields drops what a user may have pasted from a live object and the API server owns.
func clearServerFields(obj client.Object) {
	obj.SetResourceVersion("")
	obj.SetUID("")
	obj.SetGeneration(0)
	obj.SetCreationTimestamp(metav1.Time{})
	obj.SetDeletionTimestamp(nil)
	obj.SetManagedFields(nil)
	obj.SetGenerateName("")
}

// mergeMetadata keeps what others put on the copy: labels and annotations res does not set, and every
// finalizer (sorted, as upstream writes them).
func mergeMetadata(obj, old client.Object) {
	obj.SetLabels(union(obj.GetLabels(), old.GetLabels()))
	obj.SetAnnotations(union(obj.GetAnnotations(), old.GetAnnotations()))
	finalizers := append(slices.Clone(obj.GetFinalizers()), old.GetFinalizers()...)
	slices.Sort(finalizers)
	obj.SetFinalizers(slices.Compact(finalizers))
}

// union is mine with the keys only theirs has.
func union(mine, theirs map[string]string) map[string]string {
	if len(theirs) == 0 {
		return mine
	}
	out := maps.Clone(theirs)
	maps.Copy(out, mine)
	return out
}

// ownedBy is refs (those spec.resource gives) with rd's controller reference in place of any other: an
// object has at most one controller. A copy an earlier ResourceDistribution of the same name wrote loses that
// one's reference on its update, as upstream adopts such copies.
func ownedBy(refs []metav1.OwnerReference, rd *kruiseappsv1alpha1.ResourceDistribution) []metav1.OwnerReference {
	out := slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool {
		return r.Controller != nil && *r.Controller
	})
	return append(out, *metav1.NewControllerRef(rd, Kind))
}

// Current tells whether copy, rd's, already is what NewCopy would make of res: the same content (as the API
// server stores it), res's hash and rd's name in its annotations, and rd's UID in its controller reference.
// A copy someone edited, or one written from an earlier resource, is not.
func Current(rd *kruiseappsv1alpha1.ResourceDistribution, res *Resource, copy client.Object) bool {
	a := copy.GetAnnotations()
	ref := metav1.GetControllerOf(copy)
	return a[kruiseappsv1alpha1.ResourceDistributionHashCodeAnnotation] == res.Hash &&
		a[kruiseappsv1alpha1.ResourceDistributionSourceAnnotation] == rd.Name &&
		ref != nil && ref.UID == rd.UID && sameContent(res.Object, copy)
}

// sameContent compares what a Secret or ConfigMap holds, as the API server stores it: a Secret's stringData
// merged into its data and its type defaulted to Opaque.
func sameContent(want, got client.Object) bool {
	switch w := want.(type) {
	case *corev1.Secret:
		g, ok := got.(*corev1.Secret)
		return ok && sameSecret(w, g)
	case *corev1.ConfigMap:
		g, ok := got.(*corev1.ConfigMap)
		return ok && maps.Equal(w.Data, g.Data) && maps.EqualFunc(w.BinaryData, g.BinaryData, bytes.Equal) &&
			sameBool(w.Immutable, g.Immutable)
	}
	return false
}

func sameSecret(want, got *corev1.Secret) bool {
	return secretType(want) == secretType(got) && sameBool(want.Immutable, got.Immutable) &&
		maps.EqualFunc(secretData(want), secretData(got), bytes.Equal)
}

func secretType(s *corev1.Secret) corev1.SecretType {
	if s.Type == "" {
		return corev1.SecretTypeOpaque
	}
	return s.Type
}

// secretData is the data the API server stores for s: stringData wins over data.
func secretData(s *corev1.Secret) map[string][]byte {
	if len(s.StringData) == 0 {
		return s.Data
	}
	out := maps.Clone(s.Data)
	if out == nil {
		out = map[string][]byte{}
	}
	for k, v := range s.StringData {
		out[k] = []byte(v)
	}
	return out
}

// sameBool compares optional booleans, unset meaning false.
func sameBool(a, b *bool) bool { return (a != nil && *a) == (b != nil && *b) }
