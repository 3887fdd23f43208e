package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeImageSpec is the desired state of a NodeImage: the images the node agent should pull.
type NodeImageSpec struct {
	// images maps an image name (without tag) to its pull spec. At most 256 entries per node.
	// +optional
	Images map[string]ImageSpec `json:"images,omitempty"`
}

// ImageSpec is how to pull one image name.
type ImageSpec struct {
	// pullSecrets references secrets (usually copies in the daemon config namespace) used to authenticate.
	// +optional
	PullSecrets []ReferenceObject `json:"pullSecrets,omitempty"`

	// tags are the versions of this image to pull.
	// +required
	Tags []ImageTagSpec `json:"tags"`

	// sandboxConfig adds labels and annotations to the CRI PullImage sandbox config.
	// +optional
	SandboxConfig *SandboxConfig `json:"sandboxConfig,omitempty"`
}

// ReferenceObject names a namespaced object, written as "<namespace>/<name>".
type ReferenceObject struct {
	// namespace of the object.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// name of the object.
	// +optional
	Name string `json:"name,omitempty"`
}

// ImageTagSpec is how to pull one tag.
type ImageTagSpec struct {
	// tag of the image.
	// +required
	Tag string `json:"tag"`

	// createdAt is when this tag entry was added.
	// +optional
	CreatedAt *metav1.Time `json:"createdAt,omitempty"`

	// pullPolicy tunes the pull task. Unset uses the defaults.
	// +optional
	PullPolicy *ImageTagPullPolicy `json:"pullPolicy,omitempty"`

	// ownerReferences point at the ImagePullJobs that asked for this tag.
	// +optional
	OwnerReferences []corev1.ObjectReference `json:"ownerReferences,omitempty"`

	// version is bumped by the system each time the tag must be pulled again; the node agent reports the
	// version it handled. Read-only for users.
	// +optional
	Version int64 `json:"version,omitempty"`

	// imagePullPolicy is Always or IfNotPresent (the default).
	// +optional
	ImagePullPolicy ImagePullPolicy `json:"imagePullPolicy,omitempty"`
}

// ImageTagPullPolicy tunes the pull task of one tag.
type ImageTagPullPolicy struct {
	// timeoutSeconds bounds one pull attempt (default 600).
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`

	// backoffLimit is the number of retries before the task fails (default 3).
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// ttlSecondsAfterFinished is how long a finished task is kept before it is removed; zero removes it
	// right away, unset keeps it.
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// activeDeadlineSeconds is how long after its start the task may run before it is stopped. Unset
	// means no deadline.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
}

// NodeImageStatus is what the node agent reports about the node's pull tasks.
type NodeImageStatus struct {
	// desired is the number of pull tasks, normally the number of tags in spec.
	// +required
	Desired int32 `json:"desired"`

	// succeeded is the number of tasks in phase Succeeded.
	// +optional
	Succeeded int32 `json:"succeeded"`

	// failed is the number of tasks in phase Failed.
	// +optional
	Failed int32 `json:"failed"`

	// pulling is the number of unfinished tasks.
	// +optional
	Pulling int32 `json:"pulling"`

	// imageStatuses maps an image name to the status of its tags.
	// +optional
	ImageStatuses map[string]ImageStatus `json:"imageStatuses,omitempty"`

	// firstSyncStatus records when all pulls of a newly added node first finished, so that other
	// systems can wait for a node to be warmed up.
	// +optional
	FirstSyncStatus *SyncStatus `json:"firstSyncStatus,omitempty"`
}

// ImageStatus is the pull status of one image name.
type ImageStatus struct {
	// tags holds one status per pulled tag.
	// +required
	Tags []ImageTagStatus `json:"tags"`
}

// ImageTagStatus is the pull status of one tag.
type ImageTagStatus struct {
	// tag of the image.
	// +required
	Tag string `json:"tag"`

	// phase is Waiting, Pulling, Succeeded or Failed.
	// +required
	Phase ImagePullPhase `json:"phase"`

	// progress is the pull progress in percent (0-100). It may go back when a pull is retried.
	// +optional
	Progress int32 `json:"progress,omitempty"`

	// startTime is when the node agent started the task.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the task finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// version is the spec tag version this status is about.
	// +optional
	Version int64 `json:"version,omitempty"`

	// imageID is the pulled image's ID, as name@id.
	// +optional
	ImageID string `json:"imageID,omitempty"`

	// message explains the phase, for example the last pull error.
	// +optional
	Message string `json:"message,omitempty"`
}

// ImagePullPhase is the phase of a pull task.
type ImagePullPhase string

const (
	// ImagePhaseWaiting means the task has not started.
	ImagePhaseWaiting ImagePullPhase = "Waiting"
	// ImagePhasePulling means the task is running.
	ImagePhasePulling ImagePullPhase = "Pulling"
	// ImagePhaseSucceeded means the image was pulled.
	ImagePhaseSucceeded ImagePullPhase = "Succeeded"
	// ImagePhaseFailed means the task gave up.
	ImagePhaseFailed ImagePullPhase = "Failed"
)

// SyncStatus summarises all pull tasks of a node at one moment.
type SyncStatus struct {
	// syncAt is when the summary was taken.
	// +optional
	SyncAt metav1.Time `json:"syncAt,omitempty"`
	// status is Succeeded or Failed.
	// +optional
	Status SyncStatusPhase `json:"status,omitempty"`
	// message explains a failure.
	// +optional
	Message string `json:"message,omitempty"`
}

// SyncStatusPhase is the outcome of a node's pull tasks.
type SyncStatusPhase string

const (
	// SyncStatusSucceeded means every task on the node succeeded.
	SyncStatusSucceeded SyncStatusPhase = "Succeeded"
	// SyncStatusFailed means some task on the node failed.
	SyncStatusFailed SyncStatusPhase = "Failed"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".status.desired",description="Pull tasks on this node."
// +kubebuilder:printcolumn:name="PULLING",type="integer",JSONPath=".status.pulling",description="Pull tasks in progress."
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="Pull tasks that succeeded."
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="Pull tasks that failed."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation."

// NodeImage lists the images to pull on one node; its name is the node's name. The manager creates one
// per ready node and deletes it with the node.
type NodeImage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeImageSpec   `json:"spec,omitempty"`
	Status NodeImageStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NodeImageList is a list of NodeImages.
type NodeImageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeImage `json:"items"`
}

func init() {
	register(&NodeImage{}, &NodeImageList{})
}
