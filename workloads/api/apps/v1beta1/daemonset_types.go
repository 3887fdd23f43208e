package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

// DaemonSetUpdateStrategyType is how daemon pods are replaced.
// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
type DaemonSetUpdateStrategyType string

const (
	// RollingUpdateDaemonSetStrategyType replaces pods node by node (the default).
	RollingUpdateDaemonSetStrategyType DaemonSetUpdateStrategyType = "RollingUpdate"
	// OnDeleteDaemonSetStrategyType replaces a pod only after it was deleted.
	OnDeleteDaemonSetStrategyType DaemonSetUpdateStrategyType = "OnDelete"
)

// RollingUpdateType is how each pod is updated in a rolling update.
// +kubebuilder:validation:Enum=Standard;InPlaceIfPossible;Surging
type RollingUpdateType string

const (
	// StandardRollingUpdateType recreates pods like apps/v1 DaemonSet, surging when maxSurge > 0 (the default).
	StandardRollingUpdateType RollingUpdateType = "Standard"
	// InplaceRollingUpdateType updates in place when possible and recreates the pod otherwise.
	InplaceRollingUpdateType RollingUpdateType = "InPlaceIfPossible"
	// DeprecatedSurgingRollingUpdateType is an old alias of Standard, still accepted so that a v1alpha1
	// object reads back in v1beta1 as it was written.
	DeprecatedSurgingRollingUpdateType RollingUpdateType = "Surging"
)

// DaemonSetUpdateStrategy says how daemon pods are replaced when the template changes.
type DaemonSetUpdateStrategy struct {
	// Type is RollingUpdate (the default) or OnDelete.
	// +optional
	Type DaemonSetUpdateStrategyType `json:"type,omitempty"`

	// RollingUpdate holds the parameters of the RollingUpdate type.
	// +optional
	RollingUpdate *RollingUpdateDaemonSet `json:"rollingUpdate,omitempty"`
}

// RollingUpdateDaemonSet holds the parameters of a daemon set rolling update.
type RollingUpdateDaemonSet struct {
	// Type is how each pod is updated. Defaults to Standard.
	Type RollingUpdateType `json:"rollingUpdateType,omitempty"`

	// MaxUnavailable is how many nodes may have no available daemon pod during the update, as a number
	// or a percentage of desiredNumberScheduled (rounded up). Cannot be 0 when maxSurge is 0.
	// Defaults to 1.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many nodes may run an updated pod next to the old one during the update, as a
	// number or a percentage of desiredNumberScheduled (rounded up, at least 1). Cannot be 0 when
	// maxUnavailable is 0. Defaults to 0.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// Selector limits the update to nodes whose labels match.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Partition is the number (or percentage of desiredNumberScheduled) of daemon pods kept at the old
	// revision. Defaults to 0.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^((100|[1-9]?[0-9])%|[0-9]+)$`
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// Paused stops the update.
	// +optional
	Paused *bool `json:"paused,omitempty"`
}

// DaemonSetSpec defines the desired state of an Advanced DaemonSet.
type DaemonSetSpec struct {
	// Selector is a label query over pods that should match the daemon pods.
	// It must match the pod template's labels.
	Selector *metav1.LabelSelector `json:"selector"`

	// Template describes the pod created on every eligible node.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Template corev1.PodTemplateSpec `json:"template"`

	// UpdateStrategy says how pods are replaced when the template changes.
	// +optional
	UpdateStrategy DaemonSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// MinReadySeconds is how long a new pod must be ready, without any container crashing, before it
	// counts as available. Defaults to 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// BurstReplicas limits how many pods are created in one sync, as a number or a percentage.
	// Defaults to 250.
	// +kubebuilder:validation:XIntOrString
	BurstReplicas *intstr.IntOrString `json:"burstReplicas,omitempty"`

	// RevisionHistoryLimit is the number of old ControllerRevisions kept. Defaults to 10.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Lifecycle defines the lifecycle hooks; Advanced DaemonSet honours preDelete only.
	// +optional
	Lifecycle *kruiseappspub.Lifecycle `json:"lifecycle,omitempty"`

	// ScaleStrategy says how pods are created on nodes that have none.
	// +optional
	ScaleStrategy *DaemonSetScaleStrategy `json:"scaleStrategy,omitempty"`
}

// DaemonSetScaleStrategy says how pods are created on nodes that have none.
type DaemonSetScaleStrategy struct {
	// PartitionedScaling makes the partition also hold back the pods of nodes that have none, so a new
	// DaemonSet (or new nodes) get pods as the partition goes down (v1alpha1: the annotation
	// daemonset.kruise.io/progressive-create-pod). Defaults to false.
	// +optional
	PartitionedScaling bool `json:"partitionedScaling,omitempty"`
}

// DaemonSetStatus is the observed state of an Advanced DaemonSet. The omitempty choices are those of
// upstream: Argo CD's health check reads an absent numberAvailable as nil.
type DaemonSetStatus struct {
	// CurrentNumberScheduled is the number of nodes running at least one daemon pod that should run it.
	CurrentNumberScheduled int32 `json:"currentNumberScheduled"`

	// NumberMisscheduled is the number of nodes running a daemon pod that should not run it.
	NumberMisscheduled int32 `json:"numberMisscheduled"`

	// DesiredNumberScheduled is the number of nodes that should run the daemon pod.
	DesiredNumberScheduled int32 `json:"desiredNumberScheduled"`

	// NumberReady is the number of nodes that should run the daemon pod and have a ready one.
	NumberReady int32 `json:"numberReady"`

	// ObservedGeneration is the generation the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// UpdatedNumberScheduled is the number of nodes running an updated daemon pod.
	UpdatedNumberScheduled int32 `json:"updatedNumberScheduled"`

	// NumberAvailable is the number of nodes that should run the daemon pod and have one available
	// (ready for at least minReadySeconds).
	// +optional
	NumberAvailable int32 `json:"numberAvailable,omitempty"`

	// NumberUnavailable is the number of nodes that should run the daemon pod and have none available.
	// +optional
	NumberUnavailable int32 `json:"numberUnavailable,omitempty"`

	// CollisionCount counts revision-name hash collisions; it salts the next revision name.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// Conditions are the latest observations of the daemon set's state.
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []appsv1.DaemonSetCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// UpdateRevision is the controller-revision-hash of the newest revision (v1alpha1: daemonSetHash).
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=daemon;ads
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".status.desiredNumberScheduled",description="The desired number of pods."
// +kubebuilder:printcolumn:name="CURRENT",type="integer",JSONPath=".status.currentNumberScheduled",description="The current number of pods."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.numberReady",description="The ready number of pods."
// +kubebuilder:printcolumn:name="UP-TO-DATE",type="integer",JSONPath=".status.updatedNumberScheduled",description="The updated number of pods."
// +kubebuilder:printcolumn:name="AVAILABLE",type="integer",JSONPath=".status.numberAvailable",description="The updated number of pods."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
// +kubebuilder:printcolumn:name="CONTAINERS",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].name",description="The containers of currently  daemonset."
// +kubebuilder:printcolumn:name="IMAGES",type="string",priority=1,JSONPath=".spec.template.spec.containers[*].image",description="The images of currently advanced daemonset."

// DaemonSet (Advanced DaemonSet) in its v1beta1 form, which the manager converts to and from the stored
// v1alpha1 one. It runs one pod per eligible node like apps/v1 DaemonSet, adding in-place
// update, partitioned and node-selective rollout, pausing and a preDelete lifecycle hook.
type DaemonSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DaemonSetSpec   `json:"spec,omitempty"`
	Status DaemonSetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DaemonSetList contains a list of DaemonSet.
type DaemonSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DaemonSet `json:"items"`
}

func init() {
	register(&DaemonSet{}, &DaemonSetList{})
}
