package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ReleasePlan is the batch plan of a BatchRelease.
type ReleasePlan struct {
	// Batches are the batches of the plan; canaryReplicas must not decrease from one batch to the next.
	// +optional
	Batches []ReleaseBatch `json:"batches"`
	// BatchPartition is the last batch (0-based) to release; nil releases every batch and finalises.
	// +optional
	BatchPartition *int32 `json:"batchPartition,omitempty"`
	// RolloutID identifies the release; a new ID restarts from the first batch.
	// +optional
	RolloutID string `json:"rolloutID,omitempty"`
	// FailureThreshold is how many failed pods of the upgraded ones are tolerated before a batch is
	// ready: an absolute number or a percentage. Nil means the workload's maxUnavailable.
	// +optional
	// +kubebuilder:validation:XIntOrString
	FailureThreshold *intstr.IntOrString `json:"failureThreshold,omitempty"`
	// FinalizingPolicy is what finalising waits for; empty means Immediate.
	// +optional
	// +kubebuilder:validation:Enum=WaitResume;Immediate
	FinalizingPolicy FinalizingPolicyType `json:"finalizingPolicy,omitempty"`
	// PatchPodTemplateMetadata is merged into the pod template metadata of the canary Deployment.
	// +optional
	PatchPodTemplateMetadata *PatchPodTemplateMetadata `json:"patchPodTemplateMetadata,omitempty"`
	// RollingStyle is Canary, Partition or BlueGreen; when empty, enableExtraWorkloadForCanary decides.
	// +optional
	// +kubebuilder:validation:Enum=Canary;Partition;BlueGreen
	RollingStyle RollingStyleType `json:"rollingStyle,omitempty"`
	// EnableExtraWorkloadForCanary selects Canary (true) or Partition (false) when rollingStyle is
	// empty; ignored for blue-green. Always serialised.
	EnableExtraWorkloadForCanary bool `json:"enableExtraWorkloadForCanary"`
}

// FinalizingPolicyType is what a BatchRelease waits for when it finalises.
type FinalizingPolicyType string

// Finalizing policies.
const (
	// WaitResumeFinalizingPolicyType waits until every pod of the workload is upgraded (canary style).
	WaitResumeFinalizingPolicyType FinalizingPolicyType = "WaitResume"
	// ImmediateFinalizingPolicyType finalises without waiting.
	ImmediateFinalizingPolicyType FinalizingPolicyType = "Immediate"
)

// ReleaseBatch is one batch of a ReleasePlan.
type ReleaseBatch struct {
	// CanaryReplicas is the number of upgraded pods this batch reaches: an absolute number or a
	// percentage of the workload's replicas.
	// +kubebuilder:validation:XIntOrString
	CanaryReplicas intstr.IntOrString `json:"canaryReplicas"`
}

// BatchReleaseStatus is the observed state of a BatchRelease.
type BatchReleaseStatus struct {
	// Conditions of the BatchRelease.
	// +optional
	Conditions []RolloutCondition `json:"conditions,omitempty"`
	// CanaryStatus is the state of the current batch.
	// +optional
	CanaryStatus BatchReleaseCanaryStatus `json:"canaryStatus,omitempty"`
	// StableRevision is the pod-template-hash of the stable revision.
	// +optional
	StableRevision string `json:"stableRevision,omitempty"`
	// UpdateRevision is the pod-template-hash of the update revision.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// ObservedGeneration is the most recent generation observed for this BatchRelease.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ObservedRolloutID is the most recent rollout-id observed; a change restarts from batch 0.
	// +optional
	ObservedRolloutID string `json:"observedRolloutID,omitempty"`
	// ObservedWorkloadReplicas is the workload's replicas when last observed (-1 before); a change
	// means the workload was scaled during the release.
	// +optional
	ObservedWorkloadReplicas int32 `json:"observedWorkloadReplicas,omitempty"`
	// CollisionCount avoids name collisions of canary Deployments.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// ObservedReleasePlanHash is the hash of the observed spec.releasePlan.
	// +optional
	ObservedReleasePlanHash string `json:"observedReleasePlanHash,omitempty"`
	// Phase of the BatchRelease: Preparing, Progressing, Finalizing or Completed.
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`
	// Message tells why the BatchRelease is in its phase.
	// +optional
	Message string `json:"message,omitempty"`
}

// BatchReleaseCanaryStatus is the state of the current batch.
type BatchReleaseCanaryStatus struct {
	// CurrentBatchState is the state of the current batch.
	// +optional
	// +kubebuilder:validation:Enum=Upgrading;Verifying;Ready
	CurrentBatchState BatchReleaseBatchStateType `json:"batchState,omitempty"`
	// CurrentBatch is the 0-based batch being released.
	CurrentBatch int32 `json:"currentBatch"`
	// BatchReadyTime is when the current (or last) batch became ready.
	// +optional
	BatchReadyTime *metav1.Time `json:"batchReadyTime,omitempty"`
	// UpdatedReplicas is the number of upgraded pods.
	// +optional
	// +kubebuilder:validation:Minimum=0
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// UpdatedReadyReplicas is the number of upgraded pods that are ready.
	// +optional
	// +kubebuilder:validation:Minimum=0
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas,omitempty"`
	// NoNeedUpdateReplicas is the number of pods a rollback in batches leaves alone.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NoNeedUpdateReplicas *int32 `json:"noNeedUpdateReplicas,omitempty"`
}

// BatchReleaseBatchStateType is the state of a batch.
type BatchReleaseBatchStateType string

// Batch states, in order.
const (
	// UpgradingBatchState: the batch's pods are being upgraded.
	UpgradingBatchState BatchReleaseBatchStateType = "Upgrading"
	// VerifyingBatchState: the batch is checked for readiness.
	VerifyingBatchState BatchReleaseBatchStateType = "Verifying"
	// ReadyBatchState: the batch is ready.
	ReadyBatchState BatchReleaseBatchStateType = "Ready"
)

// BatchRelease-only phases; Progressing is shared with Rollout.
const (
	// RolloutPhasePreparing: the BatchRelease is initialising the workload.
	RolloutPhasePreparing RolloutPhase = "Preparing"
	// RolloutPhaseFinalizing: the BatchRelease is releasing its control of the workload.
	RolloutPhaseFinalizing RolloutPhase = "Finalizing"
	// RolloutPhaseCompleted: the BatchRelease is done (completed, cancelled or terminated).
	RolloutPhaseCompleted RolloutPhase = "Completed"
)
