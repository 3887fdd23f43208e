package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// copyNamePrefixMax keeps a copy's name, prefix, '-' and hash, well within a Secret name's 253 characters.
const copyNamePrefixMax = 200

// JobKey is "<namespace>/<name>" of an ImagePullJob, as the copies' references annotation lists it.
func JobKey(job *kruiseappsv1alpha1.ImagePullJob) string { return job.Namespace + "/" + job.Name }

// CopyName names the copy of the pull secret namespace/name in the node agent's config namespace: readable,
// and unique through a hash of the source's key (namespace-name alone could be two secrets'). Every job
// using one source shares its copy.
func CopyName(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	prefix := namespace + "-" + name
	if len(prefix) > copyNamePrefixMax {
		prefix = prefix[:copyNamePrefixMax]
	}
	return strings.TrimRight(prefix, "-.") + "-" + hex.EncodeToString(sum[:])[:10]
}

// Copy is the copy of source in namespace that job (jobKey) needs, given the current copy (nil when there is
// none): source's type and data, upstream's source key and references annotations and source-uid label, the
// job among the references the copy had. write is false when current is already so.
func Copy(source, current *corev1.Secret, namespace, jobKey string) (next *corev1.Secret, write bool) {
	next = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: CopyName(source.Namespace, source.Name)}}
	if current != nil {
		next = current.DeepCopy()
	}
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	next.Annotations[kruiseappsv1alpha1.ImagePullJobSecretSourceKeyAnnotation] = source.Namespace + "/" + source.Name
	next.Annotations[kruiseappsv1alpha1.ImagePullJobSecretReferencesAnnotation] = referencesValue(append(References(current), jobKey))
	next.Labels[kruiseappsv1alpha1.ImagePullJobSecretSourceUIDLabel] = string(source.UID)
	if current == nil {
		next.Type = source.Type // immutable once created
	}
	next.Data = maps.Clone(source.Data)
	return next, current == nil || !equality.Semantic.DeepEqual(current, next)
}

// Release is current without jobKey among its references: del when no job is left (the copy goes), write
// when the references changed.
func Release(current *corev1.Secret, jobKey string) (next *corev1.Secret, del, write bool) {
	refs := References(current)
	if !slices.Contains(refs, jobKey) {
		return current, false, false
	}
	refs = slices.DeleteFunc(refs, func(k string) bool { return k == jobKey })
	if len(refs) == 0 {
		return current, true, false
	}
	next = current.DeepCopy()
	next.Annotations[kruiseappsv1alpha1.ImagePullJobSecretReferencesAnnotation] = referencesValue(refs)
	return next, false, true
}

// References are the jobs a copy serves, from upstream's references annotation; none for nil.
func References(s *corev1.Secret) []string {
	if s == nil || s.Annotations[kruiseappsv1alpha1.ImagePullJobSecretReferencesAnnotation] == "" {
		return nil
	}
	return strings.Split(s.Annotations[kruiseappsv1alpha1.ImagePullJobSecretReferencesAnnotation], ",")
}

// IsCopy tells a Secret of the config namespace that is a pull secret's copy.
func IsCopy(s *corev1.Secret) bool {
	_, ok := s.Annotations[kruiseappsv1alpha1.ImagePullJobSecretSourceKeyAnnotation]
	return ok
}

func referencesValue(keys []string) string {
	slices.Sort(keys)
	return strings.Join(slices.Compact(keys), ",")
}
