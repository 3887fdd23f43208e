// Package launchpriority is the pure part of container launch priority (upstream's
// apps.kruise.io/container-launch-priority): which containers of a new pod start in which order, and which
// barrier key opens next for a running pod. It reads no cluster state.
//
// The pod webhook calls Assign after SidecarSet injection, so that injected sidecars take part: with
// `apps.kruise.io/container-launch-priority: Ordered` the containers start in their order in the spec
// (sidecars injected BeforeAppContainer first), otherwise by each container's KRUISE_CONTAINER_PRIORITY env
// (higher first, 0 when unset). Every prioritised container gets the env KRUISE_CONTAINER_BARRIER read from
// the key p_<priority> of the ConfigMap <pod>-barrier: the kubelet does not start a container whose env
// references a missing key, so the barrier holds it.
//
// The controller calls Next with the pod and its barrier's keys: it opens the highest priority whose
// containers are not all ready, one at a time, and marks the pod completed once the lowest is open.
package launchpriority
