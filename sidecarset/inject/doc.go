// Package inject is the pure part of SidecarSet injection: which SidecarSets a pod matches, what injecting
// them changes in the pod, and the hashes that tell later whether a pod's sidecars are current. It reads no
// cluster state; the pod webhook and the SidecarSet controller gather what it needs.
package inject
