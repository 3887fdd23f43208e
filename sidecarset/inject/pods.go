package inject

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// SetHash is the set's kruise.io/sidecarset-hash: its own annotation (written by its defaulting webhook, or
// restored with a historical revision), else computed.
func SetHash(set *kruiseappsv1alpha1.SidecarSet) (string, error) {
	if h := set.Annotations[kruiseappsv1alpha1.SidecarSetHashAnnotation]; h != "" {
		return h, nil
	}
	return Hash(set)
}

// SetHashWithoutImage is SetHash for kruise.io/sidecarset-hash-without-image.
func SetHashWithoutImage(set *kruiseappsv1alpha1.SidecarSet) (string, error) {
	if h := set.Annotations[kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation]; h != "" {
		return h, nil
	}
	return HashWithoutImage(set)
}

// IsInjected tells whether the SidecarSet named setName injected pod (kruise.io/sidecarset-injected-list).
func IsInjected(pod *corev1.Pod, setName string) bool {
	return slices.Contains(InjectedSidecarSets(pod), setName)
}

// PodHash is the SidecarSet hash the pod's sidecars of setName were injected or last updated with; "" when
// the pod has none.
func PodHash(pod *corev1.Pod, setName string) string {
	return podHash(pod, kruiseappsv1alpha1.SidecarSetHashAnnotation, setName).Hash
}

// PodHashWithoutImage is PodHash for the hash computed with images blanked.
func PodHashWithoutImage(pod *corev1.Pod, setName string) string {
	return podHash(pod, kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation, setName).Hash
}

// PodControllerRevision is the ControllerRevision of setName the pod's sidecars come from, as recorded at
// injection or update; "" when unknown.
func PodControllerRevision(pod *corev1.Pod, setName string) string {
	return podHash(pod, kruiseappsv1alpha1.SidecarSetHashAnnotation, setName).ControllerRevision
}

// IsUpdated tells whether the pod's sidecars of set are at the set's current hash.
func IsUpdated(pod *corev1.Pod, set *kruiseappsv1alpha1.SidecarSet) bool {
	h, err := SetHash(set)
	return err == nil && h == PodHash(pod, set.Name)
}

// UpdatableInPlace tells whether the pod's sidecars of set differ from the set in images only (their hashes
// without image are equal): only then can they be updated in place, since a pod's containers accept no
// other change.
func UpdatableInPlace(pod *corev1.Pod, set *kruiseappsv1alpha1.SidecarSet) bool {
	h, err := SetHashWithoutImage(set)
	return err == nil && h != "" && h == PodHashWithoutImage(pod, set.Name)
}

// SidecarContainerNames are the names set's containers take in a pod, sorted: a hot-upgrade container X
// runs as.
func SidecarContainerNames(set *kruiseappsv1alpha1.SidecarSet) []string {
	var names []string
	for i := range set.Spec.Containers {
		c := &set.Spec.Containers[i]
		if IsHotUpgrade(c) {
			first, second := kruiseappsv1alpha1.HotUpgradeContainerNames(c.Name)
			names = append(names, first, second)
			continue
		}
		names = append(names, c.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// IsInjectedContainer tells whether a pod's container was injected by a SidecarSet (env IS_INJECTED=true).
func IsInjectedContainer(c *corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == kruiseappsv1alpha1.SidecarEnvKey {
			return e.Value == "true"
		}
	}
	return false
}
