package inject

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// IsHotUpgrade tells whether a sidecar container is upgraded hot: injected twice, so that a new version
// starts beside the working one before that one is emptied.
func IsHotUpgrade(c *kruiseappsv1alpha1.SidecarContainer) bool {
	return c.UpgradeStrategy.UpgradeType == kruiseappsv1alpha1.SidecarContainerHotUpgrade
}

// WorkingHotUpgradeContainers reads kruise.io/sidecarset-working-hotupgrade-container: sidecar name to the
// pod container doing the work, e.g. {"envoy": "envoy-2"}. A missing or unreadable annotation is empty.
func WorkingHotUpgradeContainers(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	raw := pod.Annotations[kruiseappsv1alpha1.SidecarSetWorkingHotUpgradeContainerAnnotation]
	if raw == "" || json.Unmarshal([]byte(raw), &out) != nil {
		return map[string]string{}
	}
	return out
}

// SetWorkingHotUpgradeContainers writes working to kruise.io/sidecarset-working-hotupgrade-container.
func SetWorkingHotUpgradeContainers(pod *corev1.Pod, working map[string]string) {
	encoded, _ := json.Marshal(working) // a map of strings always marshals
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[kruiseappsv1alpha1.SidecarSetWorkingHotUpgradeContainerAnnotation] = string(encoded)
}

// HotUpgradeContainers returns the pod containers of hot-upgrade sidecar sidecarName: the working one as the
// annotation records it, and the other (empty, or the old version during an upgrade). Without a record the
// second container counts as working, as upstream reads it.
func HotUpgradeContainers(pod *corev1.Pod, sidecarName string) (working, other string) {
	first, second := kruiseappsv1alpha1.HotUpgradeContainerNames(sidecarName)
	if WorkingHotUpgradeContainers(pod)[sidecarName] == first {
		return first, second
	}
	return second, first
}

// hotUpgradePair turns a prepared hot-upgrade sidecar into its two pod containers: X-1 working with the
// real image, X-2 idle with the empty image, each told its own version and the other's through env
// fieldRefs to the version annotations.
func hotUpgradePair(c *kruiseappsv1alpha1.SidecarContainer) (working, idle corev1.Container) {
	first, second := kruiseappsv1alpha1.HotUpgradeContainerNames(c.Name)
	working, idle = *c.Container.DeepCopy(), *c.Container.DeepCopy()
	working.Name, idle.Name = first, second
	idle.Image = c.UpgradeStrategy.HotUpgradeEmptyImage
	working.Env = append(working.Env, versionEnvs(first)...)
	idle.Env = append(idle.Env, versionEnvs(second)...)
	return working, idle
}

func versionEnvs(containerName string) []corev1.EnvVar {
	ref := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.annotations['%s']", key)}}
	}
	return []corev1.EnvVar{
		{Name: kruiseappsv1alpha1.SidecarSetVersionEnvKey, ValueFrom: ref(kruiseappsv1alpha1.SidecarSetVersionAnnotationKey(containerName))},
		{Name: kruiseappsv1alpha1.SidecarSetVersionAltEnvKey, ValueFrom: ref(kruiseappsv1alpha1.SidecarSetVersionAltAnnotationKey(containerName))},
	}
}

// hotUpgradeAnnotations are the annotations a freshly injected pair carries: X-1 at version "1" (working),
// X-2 at "0" (empty), each alt the other's.
func hotUpgradeAnnotations(sidecarName string) map[string]string {
	first, second := kruiseappsv1alpha1.HotUpgradeContainerNames(sidecarName)
	return map[string]string{
		kruiseappsv1alpha1.SidecarSetVersionAnnotationKey(first):     "1",
		kruiseappsv1alpha1.SidecarSetVersionAltAnnotationKey(first):  "0",
		kruiseappsv1alpha1.SidecarSetVersionAnnotationKey(second):    "0",
		kruiseappsv1alpha1.SidecarSetVersionAltAnnotationKey(second): "1",
	}
}
