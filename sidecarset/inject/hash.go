package inject

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Hash is the SidecarSet's kruise.io/sidecarset-hash: the safe-encoded hex SHA-256 of the JSON of its
// containers, and of its init containers when one of them is a native sidecar. Pods injected by upstream
// carry hashes computed the same way, so they do not look outdated to Flotilla.
func Hash(set *kruiseappsv1alpha1.SidecarSet) (string, error) {
	return hashOf(set, false)
}

// HashWithoutImage is Hash with every image blanked (kruise.io/sidecarset-hash-without-image): while a pod's
// matches, only images changed, and its sidecars can be updated in place.
func HashWithoutImage(set *kruiseappsv1alpha1.SidecarSet) (string, error) {
	return hashOf(set, true)
}

func hashOf(set *kruiseappsv1alpha1.SidecarSet, blankImages bool) (string, error) {
	doc := map[string]any{"containers": containersForHash(set.Spec.Containers, blankImages)}
	if slices.ContainsFunc(set.Spec.InitContainers, isNativeSidecar) {
		doc["initContainers"] = containersForHash(set.Spec.InitContainers, blankImages)
	}
	encoded, err := json.Marshal(doc) // maps marshal with sorted keys: the encoding is stable
	if err != nil {
		return "", fmt.Errorf("hashing SidecarSet %s: %w", set.Name, err)
	}
	sum := sha256.Sum256(encoded)
	return rand.SafeEncodeString(hex.EncodeToString(sum[:])), nil
}

func containersForHash(cs []kruiseappsv1alpha1.SidecarContainer, blankImages bool) []kruiseappsv1alpha1.SidecarContainer {
	if !blankImages {
		return cs
	}
	out := make([]kruiseappsv1alpha1.SidecarContainer, len(cs))
	for i := range cs {
		cs[i].DeepCopyInto(&out[i])
		out[i].Image = ""
	}
	return out
}

// isNativeSidecar tells whether an init container keeps running beside the app (restartPolicy Always).
func isNativeSidecar(c kruiseappsv1alpha1.SidecarContainer) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
