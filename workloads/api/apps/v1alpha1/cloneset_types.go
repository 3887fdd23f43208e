package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

const (
	// CloneSetInstanceID labels a pod and its PVCs with the same random instance id; the pod is named
	// <cloneset>-<id> and a replacement pod with the id reuses the PVCs.
	CloneSetInstanceID = "apps.kruise.io/cloneset-instance-id"

	// DefaultCloneSetMaxUnavailable is updateStrategy.maxUnavailable when unset.
	DefaultCloneSetMaxUnavailable = "20%"

	// CloneSetScalingExcludePreparingDeleteKey is a CloneSet label that, set to "true", makes scaling
	// ignore pods in the PreparingDelete lifecycle state for this CloneSet only.
	CloneSetScalingExcludePreparingDeleteKey = "apps.kruise.io/cloneset-scaling-exclude-preparing-delete"
)

// CloneSetSpec defines the desired state of CloneSet.
type CloneSetSpec struct {
	// Replicas is the desired number of pods. Defaults to 1.
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector is a label query over pods that should match the replica count.
	// It must match the pod template's labels.
	Selector *metav1.LabelSelector `json:"selector"`

	// Template describes the pods that will be created.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Template corev1.PodTemplateSpec `json:"template"`

	// VolumeClaimTemplates is a list of claims that pods are allowed to reference.
	// A pod's PVCs are deleted with the pod when the CloneSet deletes it.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// ScaleStrategy controls how pods are created and deleted.
	ScaleStrategy CloneSetScaleStrategy `json:"scaleStrategy,omitempty"`

	// UpdateStrategy controls how pods are updated when the template changes.
	UpdateStrategy CloneSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// RevisionHistoryLimit is the number of old ControllerRevisions kept. Defaults to 10.
	// +kubebuilder:validation:Minimum=0
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// MinReadySeconds is how long a new pod must be ready, without any container crashing, before it
	// counts as available. Defaults to 0.
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// Lifecycle defines the hooks held before a pod becomes Normal, before deletion and around
	// in-place update.
	Lifecycle *kruiseappspub.Lifecycle `json:"lifecycle,omitempty"`

	// ProgressDeadlineSeconds is how long a rollout may go without progress (reaching the partition or
	// completing) before the Progressing condition turns False with reason ProgressDeadlineExceeded.
	// Must be greater than minReadySeconds. Unset means no deadline.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// CloneSetScaleStrategy defines how pods are created and deleted.
type CloneSetScaleStrategy struct {
	// PodsToDelete names pods to delete first; names of pods that no longer exist are dropped.
	PodsToDelete []string `json:"podsToDelete,omitempty"`

	// MaxUnavailable bounds the unavailable pods while scaling up, as a number or a percentage of
	// replicas; scaling up stops while more pods than this are unavailable.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// DisablePVCReuse makes a recreated pod get new PVCs instead of reusing the ones left by the pod
	// it replaces.
	DisablePVCReuse bool `json:"disablePVCReuse,omitempty"`
}

// CloneSetUpdateStrategy defines how pods are updated.
type CloneSetUpdateStrategy struct {
	// Type is how each pod is updated. Defaults to ReCreate.
	Type CloneSetUpdateStrategyType `json:"type,omitempty"`
	// Partition is the number (or percentage of replicas, rounded up) of pods kept at old revisions:
	// replicas - partition pods are updated. Defaults to 0.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^((100|[1-9]?[0-9])%|[0-9]+)$`
	Partition *intstr.IntOrString `json:"partition,omitempty"`
	// MaxUnavailable is how many pods may be unavailable during update or scale, as a number or a
	// percentage of replicas (rounded up, or down when maxSurge > 0). Defaults to 20%.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// MaxSurge is how many pods may be created above replicas during update or specified delete, as a
	// number or a percentage of replicas (rounded up). Defaults to 0.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^[0-9]+%$`
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
	// Paused stops the update.
	Paused bool `json:"paused,omitempty"`
	// PriorityStrategy orders the pods to update.
	PriorityStrategy *kruiseappspub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`
	// ScatterStrategy spreads pods with the given labels through the update order so they are not all
	// updated in one batch. Applied after priority sorting; one term is usually enough.
	ScatterStrategy kruiseappspub.UpdateScatterStrategy `json:"scatterStrategy,omitempty"`
	// InPlaceUpdateStrategy holds the in-place update parameters.
	InPlaceUpdateStrategy *kruiseappspub.InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty"`
}

// CloneSetUpdateStrategyType is how a CloneSet updates each pod.
// +kubebuilder:validation:Enum=ReCreate;InPlaceIfPossible;InPlaceOnly;OnDelete
type CloneSetUpdateStrategyType string

const (
	// RecreateCloneSetUpdateStrategyType deletes the pod and creates a new one (the default).
	RecreateCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "ReCreate"
	// InPlaceIfPossibleCloneSetUpdateStrategyType updates in place when only in-place-updatable fields
	// changed, and recreates the pod otherwise.
	InPlaceIfPossibleCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "InPlaceIfPossible"
	// InPlaceOnlyCloneSetUpdateStrategyType only updates in place; other template changes are rejected.
	InPlaceOnlyCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "InPlaceOnly"
	// OnDeleteCloneSetUpdateStrategyType never updates pods itself; pods are replaced as users delete them.
	OnDeleteCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "OnDelete"
)

// CloneSetStatus is the observed state of a CloneSet. The omitempty choices are those of upstream:
// Argo CD's health check reads an absent updatedAvailableReplicas as "paused".
type CloneSetStatus struct {
	// ObservedGeneration is the generation the controller last acted on.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of pods created by the controller.
	Replicas int32 `json:"replicas"`

	// ReadyReplicas is the number of pods with a Ready condition.
	ReadyReplicas int32 `json:"readyReplicas"`

	// AvailableReplicas is the number of pods ready for at least minReadySeconds.
	AvailableReplicas int32 `json:"availableReplicas"`

	// UpdatedReplicas is the number of pods at updateRevision.
	UpdatedReplicas int32 `json:"updatedReplicas"`

	// UpdatedReadyReplicas is the number of pods at updateRevision with a Ready condition.
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas"`

	// UpdatedAvailableReplicas is the number of pods at updateRevision ready for at least
	// minReadySeconds. Pods being resized in place count as unavailable.
	UpdatedAvailableReplicas int32 `json:"updatedAvailableReplicas,omitempty"`

	// ExpectedUpdatedReplicas is replicas - partition: the pods the controller means to update.
	ExpectedUpdatedReplicas int32 `json:"expectedUpdatedReplicas,omitempty"`

	// UpdateRevision is the newest revision.
	UpdateRevision string `json:"updateRevision,omitempty"`

	// CurrentRevision is the revision all pods were at when the last update completed.
	CurrentRevision string `json:"currentRevision,omitempty"`

	// CollisionCount counts revision-name hash collisions; it salts the next revision name.
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// Conditions are the latest observations of the CloneSet's state.
	Conditions []CloneSetCondition `json:"conditions,omitempty"`

	// LabelSelector is the serialized pod selector the scale subresource reports to autoscalers.
	LabelSelector string `json:"labelSelector,omitempty"`
}

// CloneSetConditionType is the type of a CloneSet condition.
type CloneSetConditionType string

const (
	// CloneSetConditionFailedScale: the controller failed to create or delete pods or PVCs.
	CloneSetConditionFailedScale CloneSetConditionType = "FailedScale"
	// CloneSetConditionFailedUpdate: the controller failed to update pods.
	CloneSetConditionFailedUpdate CloneSetConditionType = "FailedUpdate"
	// CloneSetConditionTypeProgressing tracks the rollout against progressDeadlineSeconds.
	CloneSetConditionTypeProgressing CloneSetConditionType = "Progressing"
)

// CloneSetConditionReason is the reason of the Progressing condition.
type CloneSetConditionReason string

const (
	// CloneSetProgressUpdated: a rollout is in progress (True).
	CloneSetProgressUpdated CloneSetConditionReason = "CloneSetUpdated"
	// CloneSetProgressPaused: updateStrategy.paused is set (True; the deadline timer is reset).
	CloneSetProgressPaused CloneSetConditionReason = "CloneSetPaused"
	// CloneSetProgressPartitionAvailable: every pod above the partition is updated and available (True).
	CloneSetProgressPartitionAvailable CloneSetConditionReason = "ProgressPartitionAvailable"
	// CloneSetAvailable: every pod is updated and available (True).
	CloneSetAvailable CloneSetConditionReason = "CloneSetAvailable"
	// CloneSetProgressDeadlineExceeded: no progress within progressDeadlineSeconds (False).
	CloneSetProgressDeadlineExceeded CloneSetConditionReason = "ProgressDeadlineExceeded"
)

// CloneSetCondition describes the state of a CloneSet at a certain point.
type CloneSetCondition struct {
	// Type of CloneSet condition.
	Type CloneSetConditionType `json:"type"`
	// Status of the condition, one of True, False, Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// LastUpdateTime is the last time the condition was written; the progress deadline counts from it.
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
	// LastTransitionTime is the last time the status changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a machine-readable reason for the last transition.
	Reason string `json:"reason,omitempty"`
	// Message is a human-readable explanation.
	Message string `json:"message,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:scope=Namespaced,shortName=clone
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".spec.replicas",description="The desired number of pods."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedReplicas",description="The number of pods updated."
// +kubebuilder:printcolumn:name="UPDATED_READY",type="integer",JSONPath=".status.updatedReadyReplicas",description="The number of pods updated and ready."
// +kubebuilder:printcolumn:name="UPDATED_AVAILABLE",type="integer",JSONPath=".status.updatedAvailableReplicas",description="The number of pods updated and available."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyReplicas",description="The number of pods ready."
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.replicas",description="The number of currently all pods."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
// +kubebuilder:printcolumn:name="CONTAINERS",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].name",description="The containers of currently cloneset."
// +kubebuilder:printcolumn:name="IMAGES",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].image",description="The images of currently cloneset."
// +kubebuilder:printcolumn:name="SELECTOR",type="string",priority=1,JSONPath=".status.labelSelector",description="The selector of currently cloneset."

// CloneSet manages a set of interchangeable pods like a Deployment without ReplicaSets, adding in-place
// update, partitioned rollout, selective pod deletion, per-pod PVCs and lifecycle hooks.
type CloneSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CloneSetSpec   `json:"spec,omitempty"`
	Status CloneSetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CloneSetList contains a list of CloneSet.
type CloneSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CloneSet `json:"items"`
}

func init() {
	register(&CloneSet{}, &CloneSetList{})
}
