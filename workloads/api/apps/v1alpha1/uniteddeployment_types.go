package v1alpha1

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// UpdateStrategyType is how a UnitedDeployment rolls a template change out to its subsets.
// +kubebuilder:validation:Enum=Manual;""
type UpdateStrategyType string

// ManualUpdateStrategyType: the user moves the rollout by editing the per-subset partitions.
const ManualUpdateStrategyType UpdateStrategyType = "Manual"

// UnitedDeploymentConditionType is the type of a UnitedDeployment condition.
type UnitedDeploymentConditionType string

const (
	// SubsetProvisioned: every expected subset workload exists and no unexpected one does.
	SubsetProvisioned UnitedDeploymentConditionType = "SubsetProvisioned"
	// SubsetUpdated: every subset workload carries the current template.
	SubsetUpdated UnitedDeploymentConditionType = "SubsetUpdated"
	// SubsetFailure: reconciling one of the subsets failed.
	SubsetFailure UnitedDeploymentConditionType = "SubsetFailure"
	// UnitedDeploymentUpdated: currentRevision equals the updated revision.
	UnitedDeploymentUpdated UnitedDeploymentConditionType = "UnitedDeploymentUpdated"
)

// UnitedDeploymentSpec defines the desired state of UnitedDeployment.
type UnitedDeploymentSpec struct {
	// Replicas is the total desired number of pods over all subsets. Defaults to 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector is a label query over pods that should match the replica count.
	// It must match the pod template's labels.
	Selector *metav1.LabelSelector `json:"selector"`

	// Template is the workload created for each subset.
	// +optional
	Template SubsetTemplate `json:"template,omitempty"`

	// Topology lists the subsets and how pods are spread over them.
	// +optional
	Topology Topology `json:"topology,omitempty"`

	// UpdateStrategy controls how a template change reaches the subsets.
	// +optional
	UpdateStrategy UnitedDeploymentUpdateStrategy `json:"updateStrategy,omitempty"`

	// RevisionHistoryLimit is the number of old ControllerRevisions kept. Defaults to 10.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// SubsetTemplate holds exactly one workload template, used for every subset.
type SubsetTemplate struct {
	// StatefulSetTemplate creates apps/v1 StatefulSets.
	// +optional
	StatefulSetTemplate *StatefulSetTemplateSpec `json:"statefulSetTemplate,omitempty"`

	// AdvancedStatefulSetTemplate creates Advanced StatefulSets.
	// +optional
	AdvancedStatefulSetTemplate *AdvancedStatefulSetTemplateSpec `json:"advancedStatefulSetTemplate,omitempty"`

	// CloneSetTemplate creates CloneSets.
	// +optional
	CloneSetTemplate *CloneSetTemplateSpec `json:"cloneSetTemplate,omitempty"`

	// DeploymentTemplate creates apps/v1 Deployments.
	// +optional
	DeploymentTemplate *DeploymentTemplateSpec `json:"deploymentTemplate,omitempty"`
}

// StatefulSetTemplateSpec is the subset template of an apps/v1 StatefulSet.
type StatefulSetTemplateSpec struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Spec appsv1.StatefulSetSpec `json:"spec"`
}

// AdvancedStatefulSetTemplateSpec is the subset template of an Advanced StatefulSet.
type AdvancedStatefulSetTemplateSpec struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              kruiseappsv1beta1.StatefulSetSpec `json:"spec"`
}

// CloneSetTemplateSpec is the subset template of a CloneSet.
type CloneSetTemplateSpec struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              CloneSetSpec `json:"spec"`
}

// DeploymentTemplateSpec is the subset template of an apps/v1 Deployment.
type DeploymentTemplateSpec struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Spec appsv1.DeploymentSpec `json:"spec"`
}

// UnitedDeploymentUpdateStrategy controls how a template change reaches the subsets.
type UnitedDeploymentUpdateStrategy struct {
	// Type of the update strategy. Defaults to Manual.
	// +optional
	Type UpdateStrategyType `json:"type,omitempty"`
	// ManualUpdate holds the parameters of the Manual type.
	// +optional
	ManualUpdate *ManualUpdate `json:"manualUpdate,omitempty"`
}

// ManualUpdate lets the user drive the rollout through each subset's partition.
type ManualUpdate struct {
	// Partitions maps a subset name to the partition given to that subset's workload.
	// +optional
	Partitions map[string]int32 `json:"partitions,omitempty"`
}

// Topology lists the subsets of a UnitedDeployment and how pods are spread over them.
type Topology struct {
	// Subsets are the groups of nodes, each running one subset workload.
	// +patchMergeKey=name
	// +patchStrategy=merge
	// +optional
	Subsets []Subset `json:"subsets,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// ScheduleStrategy says whether pods that cannot be scheduled move to another subset.
	// +optional
	ScheduleStrategy UnitedDeploymentScheduleStrategy `json:"scheduleStrategy,omitempty"`
}

// Subset is one group of nodes of a UnitedDeployment.
type Subset struct {
	// Name is a DNS label, unique within the UnitedDeployment; subset workloads are named
	// <uniteddeployment>-<subset>-<random>.
	Name string `json:"name"`

	// NodeSelectorTerm selects the subset's nodes. It cannot be changed.
	// +optional
	NodeSelectorTerm corev1.NodeSelectorTerm `json:"nodeSelectorTerm,omitempty"`

	// Tolerations are added to the subset's pods. They cannot be changed.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Replicas is the subset's pod count, as a number or a percentage of spec.replicas. Unset subsets
	// share the rest evenly. Exclusive with minReplicas/maxReplicas.
	// +optional
	// +kubebuilder:validation:XIntOrString
	Replicas *intstr.IntOrString `json:"replicas,omitempty"`

	// MinReplicas is the lower bound of the subset's pods; subsets are filled in list order.
	// Defaults to 0.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MinReplicas *intstr.IntOrString `json:"minReplicas,omitempty"`

	// MaxReplicas is the upper bound of the subset's pods; unset means unbounded. Leave at least one
	// subset unbounded so scaling never gets stuck.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxReplicas *intstr.IntOrString `json:"maxReplicas,omitempty"`

	// Patch is a strategic merge patch applied to the subset's workload template; it wins over the other
	// subset fields.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Patch runtime.RawExtension `json:"patch,omitempty"`
}

// UnitedDeploymentScheduleStrategyType says what happens to pods a subset cannot schedule.
// +kubebuilder:validation:Enum=Adaptive;Fixed;""
type UnitedDeploymentScheduleStrategyType string

const (
	// AdaptiveUnitedDeploymentScheduleStrategyType moves pods stuck pending to another subset.
	AdaptiveUnitedDeploymentScheduleStrategyType UnitedDeploymentScheduleStrategyType = "Adaptive"
	// FixedUnitedDeploymentScheduleStrategyType keeps pods in their subset even if they cannot be
	// scheduled (the default).
	FixedUnitedDeploymentScheduleStrategyType UnitedDeploymentScheduleStrategyType = "Fixed"
)

const (
	// DefaultRescheduleCriticalDuration is adaptive.rescheduleCriticalSeconds when unset.
	DefaultRescheduleCriticalDuration = 30 * time.Second
	// DefaultUnschedulableStatusLastDuration is adaptive.unschedulableDuration when unset.
	DefaultUnschedulableStatusLastDuration = 300 * time.Second
)

// AdaptiveUnitedDeploymentStrategy holds the parameters of the Adaptive schedule strategy.
type AdaptiveUnitedDeploymentStrategy struct {
	// RescheduleCriticalSeconds is how long a pod may stay unschedulable before it is moved to a subset
	// with spare capacity. Defaults to 30.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RescheduleCriticalSeconds *int32 `json:"rescheduleCriticalSeconds,omitempty"`

	// UnschedulableDuration is how long a subset is considered unschedulable after a pod failed to
	// schedule there. Defaults to 300.
	// +optional
	// +kubebuilder:validation:Minimum=0
	UnschedulableDuration *int32 `json:"unschedulableDuration,omitempty"`

	// ReserveUnschedulablePods keeps an unschedulable pod in its subset and runs a temporary substitute
	// in another subset until the original is ready, instead of moving it for good.
	// +optional
	ReserveUnschedulablePods bool `json:"reserveUnschedulablePods,omitempty"`
}

// UnitedDeploymentScheduleStrategy says what happens to pods a subset cannot schedule.
type UnitedDeploymentScheduleStrategy struct {
	// Type is Fixed (the default) or Adaptive.
	// +optional
	Type UnitedDeploymentScheduleStrategyType `json:"type,omitempty"`

	// Adaptive holds the parameters of the Adaptive type.
	// +optional
	Adaptive *AdaptiveUnitedDeploymentStrategy `json:"adaptive,omitempty"`
}

// IsAdaptive reports whether unschedulable pods may move between subsets.
func (s *UnitedDeploymentScheduleStrategy) IsAdaptive() bool {
	return s.Type == AdaptiveUnitedDeploymentScheduleStrategyType
}

// ShouldReserveUnschedulablePods reports whether the adaptive strategy keeps unschedulable pods.
func (s *UnitedDeploymentScheduleStrategy) ShouldReserveUnschedulablePods() bool {
	return s.IsAdaptive() && s.Adaptive != nil && s.Adaptive.ReserveUnschedulablePods
}

// RescheduleCriticalDuration is the effective adaptive.rescheduleCriticalSeconds.
func (s *UnitedDeploymentScheduleStrategy) RescheduleCriticalDuration() time.Duration {
	if s.Adaptive == nil || s.Adaptive.RescheduleCriticalSeconds == nil {
		return DefaultRescheduleCriticalDuration
	}
	return time.Duration(*s.Adaptive.RescheduleCriticalSeconds) * time.Second
}

// UnschedulableDuration is the effective adaptive.unschedulableDuration.
func (s *UnitedDeploymentScheduleStrategy) UnschedulableDuration() time.Duration {
	if s.Adaptive == nil || s.Adaptive.UnschedulableDuration == nil {
		return DefaultUnschedulableStatusLastDuration
	}
	return time.Duration(*s.Adaptive.UnschedulableDuration) * time.Second
}

// UnitedDeploymentStatus is the observed state of a UnitedDeployment.
type UnitedDeploymentStatus struct {
	// ObservedGeneration is the generation the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ReadyReplicas is the number of ready pods over all subsets.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// Replicas is the number of pods over all subsets.
	Replicas int32 `json:"replicas"`

	// UpdatedReplicas is the number of pods at the current revision.
	UpdatedReplicas int32 `json:"updatedReplicas"`

	// ReservedPods is the number of unschedulable pods kept by the adaptive strategy.
	ReservedPods int32 `json:"reservedPods,omitempty"`

	// UpdatedReadyReplicas is the number of ready pods at the current revision.
	// +optional
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas,omitempty"`

	// CollisionCount counts revision-name hash collisions; it salts the next revision name.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// CurrentRevision is the revision of the current template.
	CurrentRevision string `json:"currentRevision"`

	// SubsetReplicas maps each subset to its computed pod count.
	// +optional
	SubsetReplicas map[string]int32 `json:"subsetReplicas,omitempty"`

	// SubsetStatuses reports each subset.
	SubsetStatuses []UnitedDeploymentSubsetStatus `json:"subsetStatuses,omitempty"`

	// Conditions are the latest observations of the UnitedDeployment's state.
	// +optional
	Conditions []UnitedDeploymentCondition `json:"conditions,omitempty"`

	// UpdateStatus reports the rollout's revision and partitions.
	// +optional
	UpdateStatus *UpdateStatus `json:"updateStatus,omitempty"`

	// LabelSelector is the serialized pod selector the scale subresource reports to autoscalers.
	LabelSelector string `json:"labelSelector,omitempty"`
}

// GetSubsetStatus returns the status of the named subset, or nil.
func (s *UnitedDeploymentStatus) GetSubsetStatus(subset string) *UnitedDeploymentSubsetStatus {
	for i := range s.SubsetStatuses {
		if s.SubsetStatuses[i].Name == subset {
			return &s.SubsetStatuses[i]
		}
	}
	return nil
}

// UnitedDeploymentCondition describes the state of a UnitedDeployment at a certain point.
type UnitedDeploymentCondition struct {
	// Type of the condition.
	Type UnitedDeploymentConditionType `json:"type,omitempty"`

	// Status of the condition, one of True, False, Unknown.
	Status corev1.ConditionStatus `json:"status,omitempty"`

	// LastTransitionTime is the last time the status changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// Reason is a machine-readable reason for the last transition.
	Reason string `json:"reason,omitempty"`

	// Message is a human-readable explanation.
	Message string `json:"message,omitempty"`
}

// UpdateStatus reports the rollout of a UnitedDeployment.
type UpdateStatus struct {
	// UpdatedRevision is the newest revision.
	// +optional
	UpdatedRevision string `json:"updatedRevision,omitempty"`

	// CurrentPartitions maps each subset to the partition its workload currently has.
	// +optional
	CurrentPartitions map[string]int32 `json:"currentPartitions,omitempty"`
}

// UnitedDeploymentSubsetStatus reports one subset.
type UnitedDeploymentSubsetStatus struct {
	// Name is the subset's name in topology.subsets.
	Name string `json:"name,omitempty"`
	// Replicas is the subset's target pod count.
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the subset's ready pod count.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Partition is the subset workload's partition.
	Partition int32 `json:"partition,omitempty"`
	// ReservedPods is the number of unschedulable pods kept in this subset.
	ReservedPods int32 `json:"reservedPods,omitempty"`
	// Conditions are the latest observations of the subset.
	Conditions []UnitedDeploymentSubsetCondition `json:"conditions,omitempty"`
}

// UnitedDeploymentSubsetConditionType is the type of a subset condition.
type UnitedDeploymentSubsetConditionType string

// UnitedDeploymentSubsetSchedulable is False while new pods placed in the subset would stay pending.
const UnitedDeploymentSubsetSchedulable UnitedDeploymentSubsetConditionType = "Schedulable"

// UnitedDeploymentSubsetCondition describes the state of one subset.
type UnitedDeploymentSubsetCondition struct {
	Type               UnitedDeploymentSubsetConditionType `json:"type"`
	Status             corev1.ConditionStatus              `json:"status"`
	LastTransitionTime metav1.Time                         `json:"lastTransitionTime,omitempty"`
	Reason             string                              `json:"reason,omitempty"`
	Message            string                              `json:"message,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:resource:scope=Namespaced,shortName=ud
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="DESIRED",type="integer",JSONPath=".spec.replicas",description="The desired number of pods."
// +kubebuilder:printcolumn:name="CURRENT",type="integer",JSONPath=".status.replicas",description="The number of currently all pods."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedReplicas",description="The number of pods updated."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyReplicas",description="The number of pods ready."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."

// UnitedDeployment spreads one workload template over several groups of nodes (subsets), managing one
// StatefulSet, Advanced StatefulSet, CloneSet or Deployment per subset.
type UnitedDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   UnitedDeploymentSpec   `json:"spec,omitempty"`
	Status UnitedDeploymentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// UnitedDeploymentList contains a list of UnitedDeployment.
type UnitedDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UnitedDeployment `json:"items"`
}

func init() {
	register(&UnitedDeployment{}, &UnitedDeploymentList{})
}
