package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	// BroadcastJobNameLabelKey is set on every pod of a BroadcastJob to the job's name. Users may not preset it.
	BroadcastJobNameLabelKey = "broadcastjob-name"
	// BroadcastJobControllerUIDLabelKey is set on every pod of a BroadcastJob to the job's UID. Users may not preset it.
	BroadcastJobControllerUIDLabelKey = "broadcastjob-controller-uid"

	// DefaultBroadcastJobParallelism is what the defaulting webhook writes when parallelism is unset: no limit.
	DefaultBroadcastJobParallelism = int32(1<<31 - 1)
	// DefaultBroadcastJobCompletionPolicyType is what the defaulting webhook writes when completionPolicy.type is unset.
	DefaultBroadcastJobCompletionPolicyType = Always
	// DefaultBroadcastJobFailurePolicyType is what the defaulting webhook writes when failurePolicy.type is unset.
	DefaultBroadcastJobFailurePolicyType = FailurePolicyTypeFailFast
)

// BroadcastJobSpec is the desired state of a BroadcastJob: one pod per eligible node, run to completion.
type BroadcastJobSpec struct {
	// parallelism caps how many pods run at once, as a count or a percentage of the desired pods.
	// Unset means no limit.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="parallelism must not be negative"
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	Parallelism *intstr.IntOrString `json:"parallelism,omitempty"`

	// template is the pod created on each node. It is kept verbatim (no schema) so that every
	// pod field of any Kubernetes version survives.
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Template corev1.PodTemplateSpec `json:"template"`

	// completionPolicy says when the job is finished. Its type defaults to Always.
	// +optional
	CompletionPolicy CompletionPolicy `json:"completionPolicy"`

	// paused stops the job from creating new pods.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// failurePolicy says what happens when a pod fails. Its type defaults to FailFast.
	// +optional
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
}

// CompletionPolicy says when a job is finished. ImagePullJob and ImageListPullJob reuse it.
type CompletionPolicy struct {
	// type is Always (the job ends once every desired node is done, the deadline passes or the
	// restart limit is hit) or Never (the job stays alive and covers nodes added later).
	// +optional
	Type CompletionPolicyType `json:"type,omitempty"`

	// activeDeadlineSeconds is how long after its start time the job may stay active before it is
	// terminated and failed. Only honoured with type Always.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// ttlSecondsAfterFinished is how long a finished job is kept before it is deleted; zero deletes it
	// right away, unset keeps it. Only honoured with type Always.
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// CompletionPolicyType is the kind of CompletionPolicy.
// +kubebuilder:validation:Enum=Always;Never
type CompletionPolicyType string

const (
	// Always finishes the job when all desired nodes are done, the deadline passes or the restart limit is hit.
	Always CompletionPolicyType = "Always"
	// Never keeps the job alive so that nodes added later get a pod too.
	Never CompletionPolicyType = "Never"
)

// FailurePolicy says how a BroadcastJob reacts to a failed pod.
type FailurePolicy struct {
	// type is Continue, FailFast (the default) or Pause.
	// +optional
	Type FailurePolicyType `json:"type,omitempty"`

	// restartLimit is how many container restarts a pod with restartPolicy OnFailure may have before it
	// counts as failed.
	// +optional
	RestartLimit int32 `json:"restartLimit,omitempty"`
}

// FailurePolicyType is the kind of FailurePolicy.
// +kubebuilder:validation:Enum=Continue;FailFast;Pause
type FailurePolicyType string

const (
	// FailurePolicyTypeContinue keeps the job running when a pod fails.
	FailurePolicyTypeContinue FailurePolicyType = "Continue"
	// FailurePolicyTypeFailFast fails the job as soon as a pod fails. It is the default.
	FailurePolicyTypeFailFast FailurePolicyType = "FailFast"
	// FailurePolicyTypePause pauses the job when a pod fails.
	FailurePolicyTypePause FailurePolicyType = "Pause"
)

// BroadcastJobStatus is the observed state of a BroadcastJob.
type BroadcastJobStatus struct {
	// conditions holds Complete and Failed conditions.
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []JobCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// startTime is when the controller first picked the job up.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the job finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// active is the number of running pods.
	// +optional
	Active int32 `json:"active"`

	// succeeded is the number of pods in phase Succeeded.
	// +optional
	Succeeded int32 `json:"succeeded"`

	// failed is the number of pods in phase Failed.
	// +optional
	Failed int32 `json:"failed"`

	// desired is the number of pods wanted, usually the number of eligible nodes.
	// +optional
	Desired int32 `json:"desired"`

	// phase is running, completed, paused or failed (lowercase: Argo CD's health check compares these strings).
	// +optional
	Phase BroadcastJobPhase `json:"phase"`
}

// BroadcastJobPhase is the lifecycle phase of a BroadcastJob. Values are lowercase on the wire.
type BroadcastJobPhase string

const (
	// PhaseCompleted means the job finished successfully.
	PhaseCompleted BroadcastJobPhase = "completed"
	// PhaseRunning means the job still has work to do.
	PhaseRunning BroadcastJobPhase = "running"
	// PhasePaused means spec.paused (or failurePolicy Pause) stopped the job.
	PhasePaused BroadcastJobPhase = "paused"
	// PhaseFailed means the job failed.
	PhaseFailed BroadcastJobPhase = "failed"
)

// JobConditionType is the type of a JobCondition.
type JobConditionType string

const (
	// JobComplete means pods ran on every eligible node (known at the start of a reconcile) and all of
	// them ended, successfully or not.
	JobComplete JobConditionType = "Complete"
	// JobFailed means the job passed its deadline or a pod exceeded the restart limit.
	JobFailed JobConditionType = "Failed"
)

// JobCondition is one observation of a BroadcastJob.
type JobCondition struct {
	// type is Complete or Failed.
	// +required
	Type JobConditionType `json:"type"`
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

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=bcj
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Desired",type="integer",JSONPath=".status.desired",description="Pods wanted, usually one per eligible node."
// +kubebuilder:printcolumn:name="Active",type="integer",JSONPath=".status.active",description="Pods running."
// +kubebuilder:printcolumn:name="Succeeded",type="integer",JSONPath=".status.succeeded",description="Pods that succeeded."
// +kubebuilder:printcolumn:name="Failed",type="integer",JSONPath=".status.failed",description="Pods that failed."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation."

// BroadcastJob runs a pod to completion on every eligible node.
type BroadcastJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BroadcastJobSpec   `json:"spec,omitempty"`
	Status BroadcastJobStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// BroadcastJobList is a list of BroadcastJobs.
type BroadcastJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BroadcastJob `json:"items"`
}

func init() {
	register(&BroadcastJob{}, &BroadcastJobList{})
}
