package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

// SidecarSetSpec defines the desired state of SidecarSet.
type SidecarSetSpec struct {
	// Selector is a label query over the pods to inject.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Namespace limits injection to pods of this namespace; empty means every namespace.
	// Superseded by namespaceSelector and gone in v1beta1, but still honoured.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// NamespaceSelector selects the namespaces whose pods are injected; nil matches every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// InitContainers are injected into selected pods at creation only, sorted by name and appended
	// after the pod's own init containers.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	InitContainers []SidecarContainer `json:"initContainers,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// Containers are the sidecar containers injected into selected pods.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	Containers []SidecarContainer `json:"containers,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// Volumes that the sidecar containers may mount; merged into the pod's volumes.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +patchMergeKey=name
	// +patchStrategy=merge
	Volumes []corev1.Volume `json:"volumes,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// UpdateStrategy controls how sidecars already injected into pods are updated in place.
	// +optional
	UpdateStrategy SidecarSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// InjectionStrategy controls injection into newly created pods.
	// +optional
	InjectionStrategy SidecarSetInjectionStrategy `json:"injectionStrategy,omitempty"`

	// ImagePullSecrets needed to pull the sidecar images; merged into the pod's.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// RevisionHistoryLimit is the number of ControllerRevisions kept for the SidecarSet. Defaults to 10.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// PatchPodMetadata are annotations injected into pods and, depending on the policy, updated in place.
	// +optional
	PatchPodMetadata []SidecarSetPatchPodMetadata `json:"patchPodMetadata,omitempty"`
}

// SidecarSetPatchPodMetadata is a set of pod annotations a SidecarSet manages.
type SidecarSetPatchPodMetadata struct {
	// Annotations to set on the pod.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// PatchPolicy decides what happens when the pod already has one of the annotations. Defaults to Retain.
	// +optional
	// +kubebuilder:validation:Enum=Retain;Overwrite;MergePatchJson;""
	PatchPolicy SidecarSetPatchPolicyType `json:"patchPolicy,omitempty"`
}

// SidecarSetPatchPolicyType is how a SidecarSet writes an annotation the pod may already carry.
type SidecarSetPatchPolicyType string

const (
	// SidecarSetRetainPatchPolicy keeps the pod's own value; applied at injection only, never on in-place update.
	SidecarSetRetainPatchPolicy SidecarSetPatchPolicyType = "Retain"
	// SidecarSetOverwritePatchPolicy replaces the pod's value, at injection and on in-place update.
	SidecarSetOverwritePatchPolicy SidecarSetPatchPolicyType = "Overwrite"
	// SidecarSetMergePatchJsonPatchPolicy JSON-merge-patches the value into the pod's, so several
	// SidecarSets can contribute keys of one JSON annotation.
	SidecarSetMergePatchJsonPatchPolicy SidecarSetPatchPolicyType = "MergePatchJson"
)

// SidecarContainer is a container to inject, plus how it is injected and upgraded.
type SidecarContainer struct {
	// The container fields are kept schemaless, as upstream does, so that the CRD stays small and
	// new core fields pass through without a CRD update.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	corev1.Container `json:",inline"`

	// PodInjectPolicy places the container before or after the pod's own containers. Ignored for
	// init containers. Defaults to BeforeAppContainer.
	// +optional
	// +kubebuilder:validation:Enum=BeforeAppContainer;AfterAppContainer;""
	PodInjectPolicy PodInjectPolicyType `json:"podInjectPolicy,omitempty"`

	// UpgradeStrategy selects cold (restart) or hot (two-container hand-over) upgrades.
	// +optional
	UpgradeStrategy SidecarContainerUpgradeStrategy `json:"upgradeStrategy,omitempty"`

	// ShareVolumePolicy enabled mounts the volumeMounts of the pod's other containers into this one.
	// +optional
	ShareVolumePolicy ShareVolumePolicy `json:"shareVolumePolicy,omitempty"`

	// ShareVolumeDevicePolicy enabled attaches the volumeDevices of the pod's other containers to this one.
	// +optional
	ShareVolumeDevicePolicy *ShareVolumePolicy `json:"shareVolumeDevicePolicy,omitempty"`

	// TransferEnv copies environment variables from the pod's other containers into this one.
	// +optional
	TransferEnv []TransferEnvVar `json:"transferEnv,omitempty"`

	// ResourcesPolicy computes this container's resources from the pod's other containers at pod
	// creation; it excludes setting resources directly.
	// +optional
	ResourcesPolicy *ResourcesPolicy `json:"resourcesPolicy,omitempty"`
}

// ShareVolumePolicy switches sharing of the other containers' volumes.
type ShareVolumePolicy struct {
	// Type is enabled or disabled. Defaults to disabled.
	// +optional
	// +kubebuilder:validation:Enum=enabled;disabled;""
	Type ShareVolumePolicyType `json:"type,omitempty"`
}

// PodInjectPolicyType is where a sidecar goes among the pod's containers.
type PodInjectPolicyType string

const (
	// BeforeAppContainerType injects the sidecar in front of the pod's containers.
	BeforeAppContainerType PodInjectPolicyType = "BeforeAppContainer"
	// AfterAppContainerType injects the sidecar after the pod's containers.
	AfterAppContainerType PodInjectPolicyType = "AfterAppContainer"
)

// ShareVolumePolicyType is enabled or disabled.
type ShareVolumePolicyType string

const (
	// ShareVolumePolicyEnabled shares the other containers' volumes with the sidecar.
	ShareVolumePolicyEnabled ShareVolumePolicyType = "enabled"
	// ShareVolumePolicyDisabled does not.
	ShareVolumePolicyDisabled ShareVolumePolicyType = "disabled"
)

// TransferEnvVar copies env vars of another container of the pod into the sidecar.
type TransferEnvVar struct {
	// SourceContainerName is the container to copy from.
	// +optional
	SourceContainerName string `json:"sourceContainerName,omitempty"`
	// SourceContainerNameFrom reads the source container name from a pod field.
	// +optional
	SourceContainerNameFrom *SourceContainerNameSource `json:"sourceContainerNameFrom,omitempty"`
	// EnvName is a single variable to copy.
	// +optional
	EnvName string `json:"envName,omitempty"`
	// EnvNames are several variables to copy.
	// +optional
	EnvNames []string `json:"envNames,omitempty"`
}

// SourceContainerNameSource points at a pod field that names the source container.
type SourceContainerNameSource struct {
	// FieldRef selects metadata.name, metadata.labels['<KEY>'] or metadata.annotations['<KEY>'].
	// +optional
	FieldRef *corev1.ObjectFieldSelector `json:"fieldRef,omitempty"`
}

// SidecarContainerUpgradeType is how a sidecar container is upgraded in place.
type SidecarContainerUpgradeType string

const (
	// SidecarContainerColdUpgrade restarts the container with the new image.
	SidecarContainerColdUpgrade SidecarContainerUpgradeType = "ColdUpgrade"
	// SidecarContainerHotUpgrade runs the container twice (working and empty) and swaps images so the
	// new version starts before the old one stops.
	SidecarContainerHotUpgrade SidecarContainerUpgradeType = "HotUpgrade"
)

// SidecarContainerUpgradeStrategy describes the in-place upgrade of one sidecar container.
type SidecarContainerUpgradeStrategy struct {
	// UpgradeType is ColdUpgrade (stateless sidecars) or HotUpgrade (e.g. proxies). Defaults to ColdUpgrade.
	// +optional
	// +kubebuilder:validation:Enum=ColdUpgrade;HotUpgrade;""
	UpgradeType SidecarContainerUpgradeType `json:"upgradeType,omitempty"`

	// HotUpgradeEmptyImage is the idle image of a hot-upgrade container: same command, probes and
	// lifecycle as the sidecar, doing no work.
	// +optional
	HotUpgradeEmptyImage string `json:"hotUpgradeEmptyImage,omitempty"`
}

// TargetContainersModeType is how the target containers' resources are aggregated.
type TargetContainersModeType string

const (
	// TargetContainersModeSum adds the target containers' resources.
	TargetContainersModeSum TargetContainersModeType = "sum"
	// TargetContainersModeMax takes the largest of the target containers' resources.
	TargetContainersModeMax TargetContainersModeType = "max"
)

// ResourcesPolicy derives a sidecar's resources from the pod's other containers when the pod is created.
type ResourcesPolicy struct {
	// TargetContainersMode aggregates the matched containers' resources: sum or max.
	// +optional
	// +kubebuilder:validation:Enum=sum;max
	TargetContainersMode TargetContainersModeType `json:"targetContainersMode,omitempty"`

	// TargetContainersNameRegex selects the containers (plain and native sidecars, not injected
	// sidecars) whose resources are aggregated.
	// +optional
	TargetContainersNameRegex string `json:"targetContainersNameRegex,omitempty"`

	// ResourcesExpr holds the expressions over the aggregated "cpu" and "memory" values.
	// +optional
	ResourcesExpr ResourcesExpr `json:"resourcesExpr,omitempty"`
}

// ResourcesExpr holds resource expressions such as "max(cpu*50%, 50m)".
type ResourcesExpr struct {
	// Limits expressions; unset when the targets set no limits.
	// +optional
	Limits *ResourceExprLimits `json:"limits,omitempty"`
	// Requests expressions; targets without requests count as zero.
	// +optional
	Requests *ResourceExprRequests `json:"requests,omitempty"`
}

// ResourceExprLimits are the limit expressions of a ResourcesExpr.
type ResourceExprLimits struct {
	// +optional
	CPU string `json:"cpu,omitempty"`
	// +optional
	Memory string `json:"memory,omitempty"`
}

// ResourceExprRequests are the request expressions of a ResourcesExpr.
type ResourceExprRequests struct {
	// +optional
	CPU string `json:"cpu,omitempty"`
	// +optional
	Memory string `json:"memory,omitempty"`
}

// SidecarSetInjectionStrategy controls injection into new pods.
type SidecarSetInjectionStrategy struct {
	// Paused stops injection into new pods; already injected sidecars keep running and updating.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Revision injects a historical revision instead of the latest one.
	// +optional
	Revision *SidecarSetInjectRevision `json:"revision,omitempty"`
}

// SidecarSetInjectRevision names the revision to inject.
type SidecarSetInjectRevision struct {
	// CustomVersion matches the apps.kruise.io/sidecarset-custom-version label of a ControllerRevision.
	// +optional
	CustomVersion *string `json:"customVersion,omitempty"`
	// RevisionName is the name of a ControllerRevision of this SidecarSet.
	// +optional
	RevisionName *string `json:"revisionName,omitempty"`
	// Policy decides which new pods get the named revision.
	// +optional
	// +kubebuilder:validation:Enum=Always;Partial
	// +kubebuilder:default=Always
	Policy SidecarSetInjectRevisionPolicy `json:"policy,omitempty"`
}

// SidecarSetInjectRevisionPolicy decides which new pods get the named revision.
type SidecarSetInjectRevisionPolicy string

const (
	// AlwaysSidecarSetInjectRevisionPolicy injects the named revision into every new pod.
	AlwaysSidecarSetInjectRevisionPolicy SidecarSetInjectRevisionPolicy = "Always"
	// PartialSidecarSetInjectRevisionPolicy injects the named revision into new pods not matched by
	// updateStrategy.selector and into a random share of the others given by a percentage
	// updateStrategy.partition; the rest get the latest.
	PartialSidecarSetInjectRevisionPolicy SidecarSetInjectRevisionPolicy = "Partial"
)

// SidecarSetUpdateStrategy controls the in-place update of injected sidecars.
type SidecarSetUpdateStrategy struct {
	// Type is RollingUpdate (update injected pods) or NotUpdate (inject new pods only). Defaults to RollingUpdate.
	// +optional
	// +kubebuilder:validation:Enum=NotUpdate;RollingUpdate;""
	Type SidecarSetUpdateStrategyType `json:"type,omitempty"`

	// Paused stops updating injected pods; new pods are still injected.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Selector limits updates to matching pods (canary). It also decides which new pods get the
	// revision named by injectionStrategy.revision.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Partition is the number or percentage of matched pods kept at old revisions. Defaults to 0.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 0",message="must not be negative"
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	Partition *intstr.IntOrString `json:"partition,omitempty"`

	// MaxUnavailable is the number or percentage (rounded up) of matched pods that may be unavailable
	// during the update; not 0. Defaults to 1.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 0",message="must not be negative"
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// PriorityStrategy orders the pods to update by weight or by label value.
	// +optional
	PriorityStrategy *kruiseappspub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`

	// ScatterStrategy spreads pods with the given labels through the update order (value "*" matches
	// any value). Applied after priority sorting.
	// +optional
	ScatterStrategy kruiseappspub.UpdateScatterStrategy `json:"scatterStrategy,omitempty"`
}

// SidecarSetUpdateStrategyType is NotUpdate or RollingUpdate.
type SidecarSetUpdateStrategyType string

const (
	// NotUpdateSidecarSetStrategyType only injects new pods.
	NotUpdateSidecarSetStrategyType SidecarSetUpdateStrategyType = "NotUpdate"
	// RollingUpdateSidecarSetStrategyType also updates injected pods in place.
	RollingUpdateSidecarSetStrategyType SidecarSetUpdateStrategyType = "RollingUpdate"
)

// SidecarSetStatus defines the observed state of SidecarSet.
type SidecarSetStatus struct {
	// ObservedGeneration is the most recent generation observed for this SidecarSet.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// MatchedPods is the number of pods matched by the SidecarSet and injected by it.
	MatchedPods int32 `json:"matchedPods"`

	// UpdatedPods is the number of matched pods running the latest sidecar containers.
	UpdatedPods int32 `json:"updatedPods"`

	// ReadyPods is the number of matched pods that are ready.
	ReadyPods int32 `json:"readyPods"`

	// UpdatedReadyPods is the number of matched pods that are updated and ready.
	// +optional
	UpdatedReadyPods int32 `json:"updatedReadyPods,omitempty"`

	// LatestRevision is the name of the latest ControllerRevision of the SidecarSet.
	// +optional
	LatestRevision string `json:"latestRevision,omitempty"`

	// CollisionCount counts hash collisions when naming ControllerRevisions.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="MATCHED",type="integer",JSONPath=".status.matchedPods",description="The number of pods matched."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedPods",description="The number of pods matched and updated."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyPods",description="The number of pods matched and ready."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."

// SidecarSet injects sidecar containers into matching pods at creation and updates them in place.
type SidecarSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SidecarSetSpec   `json:"spec,omitempty"`
	Status SidecarSetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SidecarSetList contains a list of SidecarSet.
type SidecarSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SidecarSet `json:"items"`
}

func init() {
	register(&SidecarSet{}, &SidecarSetList{})
}
