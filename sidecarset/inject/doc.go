// Package inject is the pure part of SidecarSet injection: which SidecarSets a pod matches, what injecting
// them changes in the pod, and the hashes and annotations that tell later whether a pod's sidecars are
// current. It reads no cluster state and no clock; the pod webhook and the SidecarSet controller gather what
// it needs (the SidecarSets, the namespace's labels, historical revisions, the time).
//
// The webhook calls Select, resolves each selected SidecarSet to the revision to inject, and calls Inject,
// refusing the pod with Inject's error. The controller judges injected pods with IsInjected, PodHash,
// IsUpdated, UpdatableInPlace and the hot-upgrade helpers (WorkingHotUpgradeContainers,
// HotUpgradeContainers).
package inject
