package pub

const (
	// ContainerLaunchPriorityEnvName is the container env users set to an integer to order container starts.
	ContainerLaunchPriorityEnvName = "KRUISE_CONTAINER_PRIORITY"
	// ContainerLaunchBarrierEnvName is the env injected into prioritised containers; it references a key of
	// the pod's barrier ConfigMap, so kubelet holds the container until that key exists.
	ContainerLaunchBarrierEnvName = "KRUISE_CONTAINER_BARRIER"

	// ContainerLaunchPriorityKey is the pod annotation that asks for ordered container launch.
	ContainerLaunchPriorityKey = "apps.kruise.io/container-launch-priority"
	// ContainerLaunchOrdered is the ContainerLaunchPriorityKey value meaning "launch in container order".
	ContainerLaunchOrdered = "Ordered"
	// ContainerLaunchPriorityCompletedKey is the pod annotation set to "true" once every barrier is released.
	ContainerLaunchPriorityCompletedKey = "apps.kruise.io/container-launch-priority-completed"
)
