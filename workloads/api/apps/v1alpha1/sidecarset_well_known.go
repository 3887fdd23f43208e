package v1alpha1

import corev1 "k8s.io/api/core/v1"

// Keys a SidecarSet writes on itself, its ControllerRevisions and the pods it injects. Existing pods
// carry these values, so they must never change.
const (
	// SidecarSetHashAnnotation holds the hash of the sidecar containers: on the SidecarSet a hex
	// SHA-256, on pods a JSON map of SidecarSet name to {updateTimestamp, hash, sidecarSetName,
	// sidecarList, controllerRevision} (older pods: a plain name-to-hash map).
	SidecarSetHashAnnotation = "kruise.io/sidecarset-hash"
	// SidecarSetHashWithoutImageAnnotation is SidecarSetHashAnnotation computed with images blanked;
	// a pod can be updated in place only while this hash matches.
	SidecarSetHashWithoutImageAnnotation = "kruise.io/sidecarset-hash-without-image"
	// SidecarSetListAnnotation on a pod lists the injected SidecarSets, comma-separated.
	SidecarSetListAnnotation = "kruise.io/sidecarset-injected-list"
	// SidecarSetInplaceUpdateStateAnnotation on a pod is a JSON map of SidecarSet name to the
	// in-place update state (image IDs before the update).
	SidecarSetInplaceUpdateStateAnnotation = "kruise.io/sidecarset-inplace-update-state"
	// SidecarSetWorkingHotUpgradeContainerAnnotation on a pod is a JSON map of hot-upgrade sidecar
	// name to the container currently doing the work, e.g. {"envoy":"envoy-1"}.
	SidecarSetWorkingHotUpgradeContainerAnnotation = "kruise.io/sidecarset-working-hotupgrade-container"
	// SidecarSetVersionAnnotationPrefix + container name holds the version of a hot-upgrade container.
	SidecarSetVersionAnnotationPrefix = "version.sidecarset.kruise.io/"
	// SidecarSetVersionAltAnnotationPrefix + container name holds the version of the other container
	// of the same hot-upgrade pair.
	SidecarSetVersionAltAnnotationPrefix = "versionalt.sidecarset.kruise.io/"

	// SidecarSetCanaryAnnotation "true" marks a SidecarSet as the canary of the one named by
	// SidecarSetBaseAnnotation; for pods matched by both, the canary wins.
	SidecarSetCanaryAnnotation = "apps.kruise.io/sidecarset-canary"
	// SidecarSetBaseAnnotation names the base SidecarSet of a canary; immutable.
	SidecarSetBaseAnnotation = "apps.kruise.io/sidecarset-base"

	// SidecarSetCustomVersionLabel on a SidecarSet is copied to its ControllerRevisions, so that
	// injectionStrategy.revision.customVersion can select one.
	SidecarSetCustomVersionLabel = "apps.kruise.io/sidecarset-custom-version"
)

// Environment variables set in injected containers.
const (
	// SidecarEnvKey "true" marks a container as injected by a SidecarSet.
	SidecarEnvKey = "IS_INJECTED"
	// SidecarSetVersionEnvKey exposes the container's own hot-upgrade version (fieldRef to the
	// SidecarSetVersionAnnotationPrefix annotation).
	SidecarSetVersionEnvKey = "SIDECARSET_VERSION"
	// SidecarSetVersionAltEnvKey exposes the version of the other container of the hot-upgrade pair.
	SidecarSetVersionAltEnvKey = "SIDECARSET_VERSION_ALT"
)

// SidecarSetUpgradable is the pod condition telling whether the pod's sidecars can be updated in
// place; its message is a JSON map of SidecarSet name to bool.
const SidecarSetUpgradable corev1.PodConditionType = "SidecarSetUpgradable"

// Reasons of the SidecarSetUpgradable condition.
const (
	// SidecarSetUpgradableReasonAllUpgradable is the reason when every injected SidecarSet can update the pod.
	SidecarSetUpgradableReasonAllUpgradable = "AllSidecarsetUpgradable"
	// SidecarSetUpgradableReasonImmutableField is the reason when a change other than an image blocks an update.
	SidecarSetUpgradableReasonImmutableField = "UpdateImmutableField"
)

// Suffixes of the two containers a hot-upgrade sidecar is injected as.
const (
	hotUpgradeContainerSuffix1 = "-1"
	hotUpgradeContainerSuffix2 = "-2"
)

// SidecarSetVersionAnnotationKey returns the pod annotation holding the version of a hot-upgrade
// container (container name such as "envoy-1").
func SidecarSetVersionAnnotationKey(containerName string) string {
	return SidecarSetVersionAnnotationPrefix + containerName
}

// SidecarSetVersionAltAnnotationKey returns the pod annotation holding the version of the other
// container of the pair that containerName belongs to.
func SidecarSetVersionAltAnnotationKey(containerName string) string {
	return SidecarSetVersionAltAnnotationPrefix + containerName
}

// HotUpgradeContainerNames returns the names of the two containers a hot-upgrade sidecar is injected
// as: "<name>-1" (working at injection) and "<name>-2" (empty image at injection).
func HotUpgradeContainerNames(sidecarName string) (first, second string) {
	return sidecarName + hotUpgradeContainerSuffix1, sidecarName + hotUpgradeContainerSuffix2
}
