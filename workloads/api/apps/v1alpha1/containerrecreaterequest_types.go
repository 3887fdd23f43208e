package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ContainerRecreateRequestPodUIDKey is the label holding the UID of the target pod. Immutable.
	ContainerRecreateRequestPodUIDKey = "crr.apps.kruise.io/pod-uid"
	// ContainerRecreateRequestNodeNameKey is the label holding the target pod's node. Immutable; the node
	// agent selects on it.
	ContainerRecreateRequestNodeNameKey = "crr.apps.kruise.io/node-name"
	// ContainerRecreateRequestActiveKey is the label ("true") marking an unfinished request. It is removed on
	// completion so that node agents stop watching finished requests.
	ContainerRecreateRequestActiveKey = "crr.apps.kruise.io/active"
	// ContainerRecreateRequestSyncContainerStatusesKey is the annotation holding the pod's container
	// statuses (JSON list of ContainerRecreateRequestSyncContainerStatus) while the request is Recreating.
	ContainerRecreateRequestSyncContainerStatusesKey = "crr.apps.kruise.io/sync-container-statuses"
	// ContainerRecreateRequestUnreadyAcquiredKey is both an annotation and a finalizer: the pod has been
	// forced not-ready for unreadyGracePeriodSeconds and must be made ready again before the request goes.
	ContainerRecreateRequestUnreadyAcquiredKey = "crr.apps.kruise.io/unready-acquired"

	// DefaultContainerRecreateRequestFailurePolicy is what the defaulting webhook writes when strategy.failurePolicy is unset.
	DefaultContainerRecreateRequestFailurePolicy = ContainerRecreateRequestFailurePolicyFail
)

// ContainerRecreateRequestSpec is the desired state of a ContainerRecreateRequest.
type ContainerRecreateRequestSpec struct {
	// podName is the pod whose containers are recreated.
	// +required
	PodName string `json:"podName"`

	// containers are the containers to recreate, in order.
	// +required
	// +patchMergeKey=name
	// +patchStrategy=merge
	Containers []ContainerRecreateRequestContainer `json:"containers" patchStrategy:"merge" patchMergeKey:"name"`

	// strategy tunes how containers are recreated.
	// +optional
	Strategy *ContainerRecreateRequestStrategy `json:"strategy,omitempty"`

	// activeDeadlineSeconds is how long the request may run; unfinished containers are then marked failed.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// ttlSecondsAfterFinished is how long a finished request is kept before it is deleted.
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// ContainerRecreateRequestContainer is one container to recreate.
type ContainerRecreateRequestContainer struct {
	// name of a container in the pod's spec.containers.
	// +required
	Name string `json:"name"`

	// preStop is copied from the pod's container when the request is created. Read-only.
	// +optional
	PreStop *ProbeHandler `json:"preStop,omitempty"`

	// ports are copied from the pod's container when the request is created. Read-only.
	// +optional
	Ports []corev1.ContainerPort `json:"ports,omitempty"`

	// statusContext is copied from the pod's container status when the request is created, so the node
	// agent can tell whether the container was already restarted. Read-only.
	// +optional
	StatusContext *ContainerRecreateRequestContainerContext `json:"statusContext,omitempty"`
}

// ProbeHandler is the action run before stopping a container; exactly one member is set.
type ProbeHandler struct {
	// exec runs a command in the container.
	// +optional
	Exec *corev1.ExecAction `json:"exec,omitempty"`
	// httpGet sends an HTTP GET request.
	// +optional
	HTTPGet *corev1.HTTPGetAction `json:"httpGet,omitempty"`
	// tcpSocket opens a TCP connection.
	// +optional
	TCPSocket *corev1.TCPSocketAction `json:"tcpSocket,omitempty"`
}

// ContainerRecreateRequestContainerContext is the container's state when the request was created.
type ContainerRecreateRequestContainerContext struct {
	// containerID in the form '<runtime>://<id>'.
	// +required
	ContainerID string `json:"containerID"`
	// restartCount of the container.
	// +required
	RestartCount int32 `json:"restartCount"`
}

// ContainerRecreateRequestStrategy tunes how containers are recreated.
type ContainerRecreateRequestStrategy struct {
	// failurePolicy is Fail (the default: stop at the first failing container) or Ignore.
	// +optional
	// +kubebuilder:validation:Enum=Fail;Ignore
	FailurePolicy ContainerRecreateRequestFailurePolicyType `json:"failurePolicy,omitempty"`
	// orderedRecreate waits for each container to be recreated before stopping the next one.
	// +optional
	OrderedRecreate bool `json:"orderedRecreate,omitempty"`
	// forceRecreate stops the container even if it is still starting.
	// +optional
	ForceRecreate bool `json:"forceRecreate,omitempty"`
	// terminationGracePeriodSeconds is how long a container may take to stop; zero kills it at once.
	// Unset uses the pod's terminationGracePeriodSeconds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// unreadyGracePeriodSeconds marks the pod not-ready this long before running preStop and stopping.
	// +optional
	UnreadyGracePeriodSeconds *int64 `json:"unreadyGracePeriodSeconds,omitempty"`
	// minStartedSeconds is how long a new container must stay started and ready to count as Succeeded
	// (default 0).
	// +optional
	MinStartedSeconds int32 `json:"minStartedSeconds,omitempty"`
}

// ContainerRecreateRequestFailurePolicyType says what a failing container does to the request.
type ContainerRecreateRequestFailurePolicyType string

const (
	// ContainerRecreateRequestFailurePolicyFail ends the request at the first failing container.
	ContainerRecreateRequestFailurePolicyFail ContainerRecreateRequestFailurePolicyType = "Fail"
	// ContainerRecreateRequestFailurePolicyIgnore goes on with the remaining containers.
	ContainerRecreateRequestFailurePolicyIgnore ContainerRecreateRequestFailurePolicyType = "Ignore"
)

// ContainerRecreateRequestStatus is the observed state of a ContainerRecreateRequest.
type ContainerRecreateRequestStatus struct {
	// phase of the request, for example Pending, Recreating or Completed.
	// +required
	Phase ContainerRecreateRequestPhase `json:"phase"`
	// completionTime is when the request completed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// containerRecreateStates holds the state of each container.
	// +optional
	ContainerRecreateStates []ContainerRecreateRequestContainerRecreateState `json:"containerRecreateStates,omitempty"`
}

// ContainerRecreateRequestPhase is the phase of a request or of one of its containers.
type ContainerRecreateRequestPhase string

const (
	// ContainerRecreateRequestPending means the work has not started, for example because another request
	// on the same pod goes first.
	ContainerRecreateRequestPending ContainerRecreateRequestPhase = "Pending"
	// ContainerRecreateRequestRecreating means the node agent is working on it.
	ContainerRecreateRequestRecreating ContainerRecreateRequestPhase = "Recreating"
	// ContainerRecreateRequestSucceeded means a container was recreated.
	ContainerRecreateRequestSucceeded ContainerRecreateRequestPhase = "Succeeded"
	// ContainerRecreateRequestFailed means a container could not be recreated.
	ContainerRecreateRequestFailed ContainerRecreateRequestPhase = "Failed"
	// ContainerRecreateRequestCompleted means the request is finished.
	ContainerRecreateRequestCompleted ContainerRecreateRequestPhase = "Completed"
)

// ContainerRecreateRequestContainerRecreateState is the recreation state of one container.
type ContainerRecreateRequestContainerRecreateState struct {
	// name of the container.
	// +required
	Name string `json:"name"`
	// phase of the container's recreation.
	// +required
	Phase ContainerRecreateRequestPhase `json:"phase"`
	// message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// isKilled is true once the node agent stopped the container.
	// +optional
	IsKilled bool `json:"isKilled,omitempty"`
}

// ContainerRecreateRequestSyncContainerStatus is one element of the
// crr.apps.kruise.io/sync-container-statuses annotation.
type ContainerRecreateRequestSyncContainerStatus struct {
	// name of the container.
	Name string `json:"name"`
	// ready is whether the container passes its readiness probe.
	Ready bool `json:"ready"`
	// restartCount of the container.
	RestartCount int32 `json:"restartCount"`
	// containerID in the form '<runtime>://<id>'.
	ContainerID string `json:"containerID,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=crr
// +kubebuilder:printcolumn:name="PHASE",type="string",JSONPath=".status.phase",description="Phase of the request."
// +kubebuilder:printcolumn:name="POD",type="string",JSONPath=".spec.podName",description="Target pod."
// +kubebuilder:printcolumn:name="NODE",type="string",JSONPath=".metadata.labels.crr\\.apps\\.kruise\\.io/node-name",description="Node of the target pod."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation."

// ContainerRecreateRequest asks the node agent to restart some containers of a pod in place.
type ContainerRecreateRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ContainerRecreateRequestSpec   `json:"spec,omitempty"`
	Status ContainerRecreateRequestStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ContainerRecreateRequestList is a list of ContainerRecreateRequests.
type ContainerRecreateRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ContainerRecreateRequest `json:"items"`
}

func init() {
	register(&ContainerRecreateRequest{}, &ContainerRecreateRequestList{})
}
