package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// EphemeralContainerEnvKey is the env var injected into each ephemeral container, holding the UID of
	// the EphemeralJob that created it.
	EphemeralContainerEnvKey = "KRUISE_EJOB_ID"
	// EphemeralContainerFinalizer is put on an EphemeralJob until its ephemeral containers are cleaned up.
	EphemeralContainerFinalizer = "apps.kruise.io/ephemeralcontainers-cleanup"

	// DefaultEphemeralJobParallelism is the number of pods handled at once when parallelism is unset.
	DefaultEphemeralJobParallelism = int32(1)
	// DefaultEphemeralJobTTLSecondsAfterFinished is the lifetime of a finished job when ttlSecondsAfterFinished is unset.
	DefaultEphemeralJobTTLSecondsAfterFinished = int32(1800)
)

// EphemeralJobSpec is the desired state of an EphemeralJob.
type EphemeralJobSpec struct {
	// selector picks the pods that get the ephemeral containers.
	// +required
	Selector *metav1.LabelSelector `json:"selector"`

	// replicas limits how many of the matched pods get the containers (a gradual rollout). Unset, or more
	// than the matched pods, means all of them.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// parallelism is how many pods run ephemeral containers at once (default 1).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Parallelism *int32 `json:"parallelism,omitempty"`

	// template holds the ephemeral containers to add.
	// +required
	Template EphemeralContainerTemplateSpec `json:"template"`

	// paused stops the job from adding containers to more pods.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// activeDeadlineSeconds is how long after its start the job may stay active before it is terminated.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// ttlSecondsAfterFinished is how long a finished job is kept before it is deleted (default 1800; zero
	// deletes it right away).
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// EphemeralContainerTemplateSpec holds the ephemeral containers an EphemeralJob adds to each pod.
type EphemeralContainerTemplateSpec struct {
	// ephemeralContainers are added to each selected pod. They are kept verbatim (no schema).
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +patchMergeKey=name
	// +patchStrategy=merge
	EphemeralContainers []corev1.EphemeralContainer `json:"ephemeralContainers" patchStrategy:"merge" patchMergeKey:"name"`
}

// EphemeralJobStatus is the observed state of an EphemeralJob.
type EphemeralJobStatus struct {
	// conditions holds the job's conditions.
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []EphemeralJobCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// startTime is when the controller first picked the job up.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the job finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// phase is Succeeded, Failed, Waiting, Running, Paused, Error or Unknown.
	// +optional
	Phase EphemeralJobPhase `json:"phase"`

	// match is the number of pods selected.
	// +optional
	Matches int32 `json:"match"`

	// running is the number of pods whose ephemeral containers are running.
	// +optional
	Running int32 `json:"running"`

	// succeeded is the number of pods whose ephemeral containers succeeded.
	// +optional
	Succeeded int32 `json:"succeeded"`

	// waiting is the number of pods whose ephemeral containers are waiting.
	// +optional
	Waiting int32 `json:"waiting"`

	// failed is the number of pods whose ephemeral containers failed.
	// +optional
	Failed int32 `json:"failed"`
}

// EphemeralJobCondition is one observation of an EphemeralJob.
type EphemeralJobCondition struct {
	// type of the condition.
	// +required
	Type EphemeralJobConditionType `json:"type"`
	// status is True, False or Unknown.
	// +required
	Status corev1.ConditionStatus `json:"status"`
	// lastProbeTime is when the condition was last checked.
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// lastTransitionTime is when the status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// reason is a CamelCase word for the last transition.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message explains the last transition to humans.
	// +optional
	Message string `json:"message,omitempty"`
}

// EphemeralJobConditionType is the type of an EphemeralJobCondition.
type EphemeralJobConditionType string

const (
	// EJobSucceeded means the ephemeral containers finished successfully on every selected pod.
	EJobSucceeded EphemeralJobConditionType = "JobSucceeded"
	// EJobFailed means some ephemeral containers failed.
	EJobFailed EphemeralJobConditionType = "JobFailed"
	// EJobError means some ephemeral containers could not run.
	EJobError EphemeralJobConditionType = "JobError"
	// EJobInitialized means the controller has initialised the job.
	EJobInitialized EphemeralJobConditionType = "Initialized"
	// EJobMatchedEmpty means the selector matched no pod.
	EJobMatchedEmpty EphemeralJobConditionType = "MatchedEmpty"
)

// EphemeralJobPhase is the lifecycle phase of an EphemeralJob.
type EphemeralJobPhase string

const (
	// EphemeralJobSucceeded means the job succeeded.
	EphemeralJobSucceeded EphemeralJobPhase = "Succeeded"
	// EphemeralJobFailed means the job failed.
	EphemeralJobFailed EphemeralJobPhase = "Failed"
	// EphemeralJobWaiting means the job waits for its containers to start.
	EphemeralJobWaiting EphemeralJobPhase = "Waiting"
	// EphemeralJobRunning means ephemeral containers are running.
	EphemeralJobRunning EphemeralJobPhase = "Running"
	// EphemeralJobPause means spec.paused stopped the job.
	EphemeralJobPause EphemeralJobPhase = "Paused"
	// EphemeralJobError means some ephemeral containers could not run.
	EphemeralJobError EphemeralJobPhase = "Error"
	// EphemeralJobUnknown means the phase cannot be determined.
	EphemeralJobUnknown EphemeralJobPhase = "Unknown"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=ejob
// +kubebuilder:printcolumn:name="STATUS",type="string",JSONPath=".status.phase",description="Phase of the job."
// +kubebuilder:printcolumn:name="MATCH",type="integer",JSONPath=".status.match",description="Pods selected."
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="Ephemeral containers that succeeded."
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="Ephemeral containers that failed."
// +kubebuilder:printcolumn:name="RUNNING",type="integer",JSONPath=".status.running",description="Ephemeral containers running."
// +kubebuilder:printcolumn:name="WAITING",type="integer",JSONPath=".status.waiting",description="Ephemeral containers waiting."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation."

// EphemeralJob adds ephemeral containers to the pods it selects.
type EphemeralJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EphemeralJobSpec   `json:"spec,omitempty"`
	Status EphemeralJobStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// EphemeralJobList is a list of EphemeralJobs.
type EphemeralJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EphemeralJob `json:"items"`
}

func init() {
	register(&EphemeralJob{}, &EphemeralJobList{})
}
