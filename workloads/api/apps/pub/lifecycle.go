package pub

const (
	// LifecycleStateKey is the pod label holding the pod's LifecycleStateType.
	LifecycleStateKey = "lifecycle.apps.kruise.io/state"
	// LifecycleTimestampKey is the pod annotation recording (RFC3339) when the state last changed.
	LifecycleTimestampKey = "lifecycle.apps.kruise.io/timestamp"
)

// LifecycleStateType is the value of the LifecycleStateKey label.
type LifecycleStateType string

const (
	// LifecycleStatePreparingNormal: the pod is created but not yet available; it becomes Normal once
	// scheduled (no preNormal hook) or once every preNormal handler is present.
	LifecycleStatePreparingNormal LifecycleStateType = "PreparingNormal"
	// LifecycleStateNormal is required for a pod to count as available.
	LifecycleStateNormal LifecycleStateType = "Normal"
	// LifecycleStatePreparingUpdate: the workload wants to update the pod and waits for the
	// inPlaceUpdate hook to be released.
	LifecycleStatePreparingUpdate LifecycleStateType = "PreparingUpdate"
	// LifecycleStateUpdating: the in-place update is in progress.
	LifecycleStateUpdating LifecycleStateType = "Updating"
	// LifecycleStateUpdated: the update is done; the pod waits for the inPlaceUpdate hook to be re-added.
	LifecycleStateUpdated LifecycleStateType = "Updated"
	// LifecycleStatePreparingDelete: the workload wants to delete the pod and waits for the preDelete
	// hook to be released.
	LifecycleStatePreparingDelete LifecycleStateType = "PreparingDelete"
)

// Lifecycle contains the hooks a workload honours around a pod's creation, in-place update and deletion.
type Lifecycle struct {
	// PreDelete is the hook before Pod to be deleted.
	PreDelete *LifecycleHook `json:"preDelete,omitempty"`
	// InPlaceUpdate is the hook before Pod to update and after Pod has been updated.
	InPlaceUpdate *LifecycleHook `json:"inPlaceUpdate,omitempty"`
	// PreNormal is the hook after Pod to be created and ready to be Normal.
	PreNormal *LifecycleHook `json:"preNormal,omitempty"`
}

// LifecycleHook names the labels and finalizers whose presence on a pod holds it in a preparing state.
type LifecycleHook struct {
	LabelsHandler     map[string]string `json:"labelsHandler,omitempty"`
	FinalizersHandler []string          `json:"finalizersHandler,omitempty"`
	// MarkPodNotReady = true means:
	// - Pod will be set to 'NotReady' at preparingDelete/preparingUpdate state.
	// - Pod will be restored to 'Ready' at Updated state if it was set to 'NotReady' at preparingUpdate state.
	// Currently, MarkPodNotReady only takes effect on InPlaceUpdate & PreDelete hook.
	// Default to false.
	MarkPodNotReady bool `json:"markPodNotReady,omitempty"`
}
