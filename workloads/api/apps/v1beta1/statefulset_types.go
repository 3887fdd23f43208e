package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

const (
	// MaxMinReadySeconds is the largest rollingUpdate.minReadySeconds accepted.
	MaxMinReadySeconds = 300

	// OwnedByASTSAnnotation marks PVCs created from an Advanced StatefulSet's volumeClaimTemplates.
	OwnedByASTSAnnotation = "apps.kruise.io/owned-by-asts"
)

// These are the condition types an Advanced StatefulSet adds to the apps/v1 ones.
const (
	FailedCreatePod appsv1.StatefulSetConditionType = "FailedCreatePod"
	FailedUpdatePod appsv1.StatefulSetConditionType = "FailedUpdatePod"
)

// PodUpdateStrategyType says how a pod moves to a new revision.
// +kubebuilder:validation:Enum=ReCreate;InPlaceIfPossible;InPlaceOnly
type PodUpdateStrategyType string

const (
	// RecreatePodUpdateStrategyType deletes the pod and creates a new one (the default).
	RecreatePodUpdateStrategyType PodUpdateStrategyType = "ReCreate"
	// InPlaceIfPossiblePodUpdateStrategyType updates in place when only in-place-updatable fields changed,
	// and recreates the pod otherwise.
	InPlaceIfPossiblePodUpdateStrategyType PodUpdateStrategyType = "InPlaceIfPossible"
	// InPlaceOnlyPodUpdateStrategyType only updates in place; other template changes are rejected.
	InPlaceOnlyPodUpdateStrategyType PodUpdateStrategyType = "InPlaceOnly"
)

// VolumeClaimUpdateStrategyType says when PVCs follow changed volumeClaimTemplates.
// +kubebuilder:validation:Enum=OnPodRollingUpdate;OnDelete
type VolumeClaimUpdateStrategyType string

const (
	// OnPodRollingUpdateVolumeClaimUpdateStrategyType updates a pod's claims while the pod is rolled.
	OnPodRollingUpdateVolumeClaimUpdateStrategyType VolumeClaimUpdateStrategyType = "OnPodRollingUpdate"
	// OnPVCDeleteVolumeClaimUpdateStrategyType leaves claims alone until the user deletes them.
	OnPVCDeleteVolumeClaimUpdateStrategyType VolumeClaimUpdateStrategyType = "OnDelete"
)

// PersistentVolumeClaimRetentionPolicyType says whether claims outlive their pods.
// +kubebuilder:validation:Enum=Retain;Delete
type PersistentVolumeClaimRetentionPolicyType string

const (
	// RetainPersistentVolumeClaimRetentionPolicyType keeps the claims (the default).
	RetainPersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Retain"
	// DeletePersistentVolumeClaimRetentionPolicyType deletes the claims in the situation it is set for.
	DeletePersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Delete"
)

// StatefulSetSpec defines the desired state of an Advanced StatefulSet.
type StatefulSetSpec struct {
	// Replicas is the desired number of pods. Defaults to 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector is a label query over pods that should match the replica count.
	// It must match the pod template's labels.
	Selector *metav1.LabelSelector `json:"selector"`

	// Template describes the pods that will be created.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Template corev1.PodTemplateSpec `json:"template"`

	// VolumeClaimTemplates is a list of claims that pods are allowed to reference; each pod gets its own
	// claims named <template>-<pod>.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// VolumeClaimUpdateStrategy says when existing claims follow changed volumeClaimTemplates
	// (effective with the StatefulSetAutoResizePVCGate feature gate).
	// +optional
	VolumeClaimUpdateStrategy VolumeClaimUpdateStrategy `json:"volumeClaimUpdateStrategy,omitempty"`

	// ServiceName is the governing service that gives pods their stable network identity.
	ServiceName string `json:"serviceName,omitempty"`

	// PodManagementPolicy controls whether pods are created and deleted one by one in ordinal order
	// (OrderedReady, the default) or all at once (Parallel).
	// +optional
	// +kubebuilder:validation:Enum=OrderedReady;Parallel
	PodManagementPolicy appsv1.PodManagementPolicyType `json:"podManagementPolicy,omitempty"`

	// UpdateStrategy is how pods are replaced when the template changes.
	UpdateStrategy StatefulSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// RevisionHistoryLimit is the number of old ControllerRevisions kept. Defaults to 10.
	// +kubebuilder:validation:Minimum=0
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// ReserveOrdinals lists ordinals that get no pod; replicas still counts running pods, so reserving
	// ordinal 1 of [0,1,2] moves that pod to ordinal 3. Items are numbers or ranges such as "3-5".
	ReserveOrdinals []intstr.IntOrString `json:"reserveOrdinals,omitempty"`

	// Lifecycle defines the hooks held around pod deletion and in-place update.
	Lifecycle *kruiseappspub.Lifecycle `json:"lifecycle,omitempty"`

	// ScaleStrategy controls how fast pods are created and deleted when scaling.
	ScaleStrategy *StatefulSetScaleStrategy `json:"scaleStrategy,omitempty"`

	// PersistentVolumeClaimRetentionPolicy says whether claims are deleted with the set or on scale-down
	// (effective with the StatefulSetAutoDeletePVC feature gate).
	// +optional
	PersistentVolumeClaimRetentionPolicy *StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`

	// Ordinals sets the first replica's index (effective with the StatefulSetStartOrdinal feature gate).
	// +optional
	Ordinals *StatefulSetOrdinals `json:"ordinals,omitempty"`
}

// VolumeClaimUpdateStrategy controls updates of existing PVCs.
type VolumeClaimUpdateStrategy struct {
	// Type is OnPodRollingUpdate or OnDelete.
	Type VolumeClaimUpdateStrategyType `json:"type,omitempty"`
}

// StatefulSetUpdateStrategy says how pods are replaced when the template changes.
type StatefulSetUpdateStrategy struct {
	// Type is RollingUpdate (the default) or OnDelete.
	// +optional
	// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
	Type appsv1.StatefulSetUpdateStrategyType `json:"type,omitempty"`
	// RollingUpdate holds the parameters of the RollingUpdate type.
	// +optional
	RollingUpdate *RollingUpdateStatefulSetStrategy `json:"rollingUpdate,omitempty"`
}

// RollingUpdateStatefulSetStrategy holds the parameters of a rolling update.
type RollingUpdateStatefulSetStrategy struct {
	// Partition is the number of pods kept at the old revision: the controller updates
	// replicas - partition pods. Defaults to 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Partition *int32 `json:"partition,omitempty"`
	// MaxUnavailable is how many pods may be unavailable during the update, as a number or a percentage
	// of replicas (rounded down). Only honoured with the Parallel podManagementPolicy. Defaults to 1.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// PodUpdatePolicy is how each pod is updated. Defaults to ReCreate.
	// +optional
	PodUpdatePolicy PodUpdateStrategyType `json:"podUpdatePolicy,omitempty"`
	// Paused stops the update.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// UnorderedUpdate, when set, updates pods by priority instead of ordinal order (Parallel only).
	// +optional
	UnorderedUpdate *UnorderedUpdateStrategy `json:"unorderedUpdate,omitempty"`
	// InPlaceUpdateStrategy holds the in-place update parameters.
	// +optional
	InPlaceUpdateStrategy *kruiseappspub.InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty"`
	// MinReadySeconds is how long an updated pod must be ready before it counts as available. 0 to 300.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=300
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`
}

// UnorderedUpdateStrategy holds the parameters of an update that ignores ordinal order.
type UnorderedUpdateStrategy struct {
	// PriorityStrategy orders the pods to update.
	// +optional
	PriorityStrategy *kruiseappspub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`
}

// StatefulSetPersistentVolumeClaimRetentionPolicy says what happens to claims on deletion and scale-down.
type StatefulSetPersistentVolumeClaimRetentionPolicy struct {
	// WhenDeleted applies when the StatefulSet is deleted. Defaults to Retain.
	WhenDeleted PersistentVolumeClaimRetentionPolicyType `json:"whenDeleted,omitempty"`
	// WhenScaled applies to the claims of pods removed by a scale-down. Defaults to Retain.
	WhenScaled PersistentVolumeClaimRetentionPolicyType `json:"whenScaled,omitempty"`
}

// StatefulSetOrdinals controls replica numbering.
type StatefulSetOrdinals struct {
	// Start is the index of the first replica; replicas use [start, start+replicas). Defaults to 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Start int32 `json:"start"`
}

// StatefulSetScaleStrategy controls scaling.
type StatefulSetScaleStrategy struct {
	// MaxUnavailable is how many pods may be unavailable while scaling, as a number or a percentage of
	// replicas (rounded down). Only honoured with the Parallel podManagementPolicy.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// StatefulSetStatus is the observed state of an Advanced StatefulSet.
type StatefulSetStatus struct {
	// ObservedGeneration is the generation the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of pods created by the controller.
	Replicas int32 `json:"replicas"`

	// ReadyReplicas is the number of pods with a Ready condition.
	ReadyReplicas int32 `json:"readyReplicas"`

	// AvailableReplicas is the number of pods ready for at least minReadySeconds.
	AvailableReplicas int32 `json:"availableReplicas"`

	// CurrentReplicas is the number of pods at currentRevision.
	CurrentReplicas int32 `json:"currentReplicas"`

	// UpdatedReplicas is the number of pods at updateRevision.
	UpdatedReplicas int32 `json:"updatedReplicas"`

	// UpdatedReadyReplicas is the number of pods at updateRevision with a Ready condition.
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas,omitempty"`

	// UpdatedAvailableReplicas is the number of pods at updateRevision ready for at least minReadySeconds.
	UpdatedAvailableReplicas int32 `json:"updatedAvailableReplicas,omitempty"`

	// CurrentRevision is the revision of the pods in [0, currentReplicas).
	CurrentRevision string `json:"currentRevision,omitempty"`

	// UpdateRevision is the newest revision.
	UpdateRevision string `json:"updateRevision,omitempty"`

	// CollisionCount counts revision-name hash collisions; it salts the next revision name.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// Conditions are the latest observations of the set's state.
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []appsv1.StatefulSetCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// LabelSelector is the serialized pod selector the scale subresource reports to autoscalers.
	LabelSelector string `json:"labelSelector,omitempty"`

	// VolumeClaims reports, per volumeClaimTemplate, how many pods' claims match the template.
	VolumeClaims []VolumeClaimStatus `json:"volumeClaims,omitempty"`
}

// VolumeClaimStatus reports how far the claims of one volumeClaimTemplate follow it.
type VolumeClaimStatus struct {
	// VolumeClaimName is the name of the volumeClaimTemplate.
	VolumeClaimName string `json:"volumeClaimName"`
	// CompatibleReplicas counts pods whose claim requests at least the template's storage.
	CompatibleReplicas int32 `json:"compatibleReplicas"`
	// CompatibleReadyReplicas counts compatible claims whose capacity already reached the request.
	CompatibleReadyReplicas int32 `json:"compatibleReadyReplicas"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:scope=Namespaced,shortName=sts;asts
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".spec.replicas",description="The desired number of pods."
// +kubebuilder:printcolumn:name="CURRENT",type="integer",JSONPath=".status.replicas",description="The number of currently all pods."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedReplicas",description="The number of pods updated."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyReplicas",description="The number of pods ready."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
// +kubebuilder:printcolumn:name="CONTAINERS",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].name",description="The containers of currently advanced statefulset."
// +kubebuilder:printcolumn:name="IMAGES",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].image",description="The images of currently advanced statefulset."

// StatefulSet (Advanced StatefulSet) runs pods with stable identities like apps/v1 StatefulSet, adding
// in-place update, parallel rolling with maxUnavailable, reserved ordinals and lifecycle hooks.
// v1beta1 is the storage version.
type StatefulSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StatefulSetSpec   `json:"spec,omitempty"`
	Status StatefulSetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// StatefulSetList contains a list of StatefulSet.
type StatefulSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StatefulSet `json:"items"`
}

func init() {
	register(&StatefulSet{}, &StatefulSetList{})
}
