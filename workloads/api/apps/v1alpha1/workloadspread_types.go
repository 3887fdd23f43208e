package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Pod annotations written by the WorkloadSpread webhook.
const (
	// MatchedWorkloadSpreadSubsetAnnotations on a pod is JSON {name, subset, uid}: the WorkloadSpread
	// and subset the pod was placed in.
	MatchedWorkloadSpreadSubsetAnnotations = "apps.kruise.io/matched-workloadspread"
	// WorkloadSpreadIgnorePatchExistingPodsAnnotation on a WorkloadSpread stops subset patches from
	// being applied to the metadata of pods that already exist.
	WorkloadSpreadIgnorePatchExistingPodsAnnotation = "workloadspread.kruise.io/ignore-patch-existing-pods-metadata"
)

// WorkloadSpreadSpec defines the desired state of WorkloadSpread.
type WorkloadSpreadSpec struct {
	// TargetReference is the workload whose pods are spread.
	TargetReference *TargetReference `json:"targetRef"`

	// TargetFilter restricts the WorkloadSpread to part of the workload's pods and says how to count them.
	// +optional
	TargetFilter *TargetFilter `json:"targetFilter,omitempty"`

	// Subsets are the places pods are spread over, filled in order.
	// +patchMergeKey=name
	// +patchStrategy=merge
	Subsets []WorkloadSpreadSubset `json:"subsets" patchStrategy:"merge" patchMergeKey:"name"`

	// ScheduleStrategy decides whether pods that cannot be scheduled in a subset move to the next one.
	// +optional
	ScheduleStrategy WorkloadSpreadScheduleStrategy `json:"scheduleStrategy,omitempty"`
}

// TargetReference identifies a workload.
type TargetReference struct {
	// APIVersion of the referent.
	APIVersion string `json:"apiVersion"`
	// Kind of the referent.
	Kind string `json:"kind"`
	// Name of the referent.
	Name string `json:"name"`
}

// TargetFilter selects part of a workload's pods (e.g. only the workers of a TFJob) and tells how
// many replicas that part has.
type TargetFilter struct {
	// Selector picks the managed pods.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// ReplicasPathList are dot-separated paths into the workload (array indexes as numbers, e.g.
	// "spec.tfReplicaSpecs.Worker.replicas") whose integer values sum to the managed replicas.
	// +optional
	ReplicasPathList []string `json:"replicasPathList,omitempty"`
}

// WorkloadSpreadScheduleStrategyType is Fixed or Adaptive.
// +kubebuilder:validation:Enum=Adaptive;Fixed;""
type WorkloadSpreadScheduleStrategyType string

const (
	// AdaptiveWorkloadSpreadScheduleStrategyType lets the controller move unschedulable pods to other
	// subsets and simulate scheduling before placing a pod.
	AdaptiveWorkloadSpreadScheduleStrategyType WorkloadSpreadScheduleStrategyType = "Adaptive"
	// FixedWorkloadSpreadScheduleStrategyType keeps pods in the subset they were placed in.
	FixedWorkloadSpreadScheduleStrategyType WorkloadSpreadScheduleStrategyType = "Fixed"
)

// WorkloadSpreadScheduleStrategy defines how pods are rescheduled between subsets.
type WorkloadSpreadScheduleStrategy struct {
	// Type is Fixed or Adaptive. Defaults to Fixed.
	// +optional
	Type WorkloadSpreadScheduleStrategyType `json:"type,omitempty"`

	// Adaptive holds the parameters of the Adaptive type.
	// +optional
	Adaptive *AdaptiveWorkloadSpreadStrategy `json:"adaptive,omitempty"`
}

// AdaptiveWorkloadSpreadStrategy holds the parameters of the Adaptive schedule strategy.
type AdaptiveWorkloadSpreadStrategy struct {
	// DisableSimulationSchedule turns off the webhook's simple fit check of a subset's nodes.
	// +optional
	DisableSimulationSchedule bool `json:"disableSimulationSchedule,omitempty"`

	// RescheduleCriticalSeconds is how long a pod may stay unschedulable in a subset before it is
	// moved to a subset with spare capacity.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RescheduleCriticalSeconds *int32 `json:"rescheduleCriticalSeconds,omitempty"`
}

// WorkloadSpreadSubset is one place pods are spread to.
type WorkloadSpreadSubset struct {
	// Name is unique among the subsets of the WorkloadSpread.
	Name string `json:"name"`

	// RequiredNodeSelectorTerm is added to the pods' required node affinity.
	// +optional
	RequiredNodeSelectorTerm *corev1.NodeSelectorTerm `json:"requiredNodeSelectorTerm,omitempty"`

	// PreferredNodeSelectorTerms are added to the pods' preferred node affinity.
	// +optional
	PreferredNodeSelectorTerms []corev1.PreferredSchedulingTerm `json:"preferredNodeSelectorTerms,omitempty"`

	// Tolerations are added to the pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// MaxReplicas is the most pods of the subset, as a number or a percentage of the workload's
	// replicas; unset means no limit. (No CEL non-negative rule here: per-item rules in this
	// unbounded list exceed the CRD cost budget; the webhook rejects negative numbers.)
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	MaxReplicas *intstr.IntOrString `json:"maxReplicas,omitempty"`

	// Patch is a strategic merge patch applied to the pods of the subset (labels, resources, ...).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Patch runtime.RawExtension `json:"patch,omitempty"`
}

// WorkloadSpreadStatus defines the observed state of WorkloadSpread.
type WorkloadSpreadStatus struct {
	// ObservedGeneration is the most recent generation observed for this WorkloadSpread.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// SubsetStatuses holds one entry per subset.
	// +optional
	SubsetStatuses []WorkloadSpreadSubsetStatus `json:"subsetStatuses,omitempty"`

	// VersionedSubsetStatuses are the subset statuses per pod revision, because during a rolling
	// update new pods may be created before old ones are deleted.
	// +optional
	VersionedSubsetStatuses map[string][]WorkloadSpreadSubsetStatus `json:"versionedSubsetStatuses,omitempty"`
}

// WorkloadSpreadSubsetConditionType is the type of a subset condition.
type WorkloadSpreadSubsetConditionType string

const (
	// SubsetSchedulable is False for a while after a pod of the subset failed to schedule.
	SubsetSchedulable WorkloadSpreadSubsetConditionType = "Schedulable"
)

// WorkloadSpreadSubsetCondition describes the state of a subset.
type WorkloadSpreadSubsetCondition struct {
	// Type of the condition.
	Type WorkloadSpreadSubsetConditionType `json:"type"`

	// Status of the condition: True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`

	// LastTransitionTime is when the status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// Reason for the last transition.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message about the last transition.
	// +optional
	Message string `json:"message,omitempty"`
}

// WorkloadSpreadSubsetStatus is the observed state of a subset.
type WorkloadSpreadSubsetStatus struct {
	// Name of the subset.
	Name string `json:"name"`

	// Replicas is the number of active pods in the subset.
	Replicas int32 `json:"replicas"`

	// Conditions of the subset.
	// +optional
	Conditions []WorkloadSpreadSubsetCondition `json:"conditions,omitempty"`

	// MissingReplicas is how many more pods the subset may take: > 0 missing, 0 full, -1 unlimited.
	MissingReplicas int32 `json:"missingReplicas"`

	// CreatingPods records pods admitted into the subset by the webhook but not yet seen by the
	// controller, keyed by pod name, with the admission time; stale entries expire.
	// +optional
	CreatingPods map[string]metav1.Time `json:"creatingPods,omitempty"`

	// DeletingPods is the same as CreatingPods for deletions.
	// +optional
	DeletingPods map[string]metav1.Time `json:"deletingPods,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ws
// +kubebuilder:printcolumn:name=WorkloadName,type=string,JSONPath=".spec.targetRef.name"
// +kubebuilder:printcolumn:name=WorkloadKind,type=string,JSONPath=".spec.targetRef.kind"
// +kubebuilder:printcolumn:name=Adaptive,type=boolean,JSONPath=`.spec.scheduleStrategy.type[?(@ == "Adaptive")]`,description="Whether use the adaptive reschedule strategy"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// WorkloadSpread spreads the pods of a workload over subsets of nodes (zones, node pools, ...) with
// per-subset limits and patches.
type WorkloadSpread struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkloadSpreadSpec   `json:"spec,omitempty"`
	Status WorkloadSpreadStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// WorkloadSpreadList contains a list of WorkloadSpread.
type WorkloadSpreadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadSpread `json:"items"`
}

func init() {
	register(&WorkloadSpread{}, &WorkloadSpreadList{})
}
