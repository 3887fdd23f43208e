package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PubOperation is a pod operation a PodUnavailableBudget can protect.
type PubOperation string

const (
	// PubUpdateOperation is a change of the pod spec (in-place update).
	PubUpdateOperation PubOperation = "UPDATE"
	// PubDeleteOperation is a pod deletion.
	PubDeleteOperation PubOperation = "DELETE"
	// PubEvictOperation is a pod eviction.
	PubEvictOperation PubOperation = "EVICT"
	// PubResizeOperation is an in-place resize of pod resources; treated as UPDATE unless
	// in-place vertical scaling is enabled.
	PubResizeOperation PubOperation = "RESIZE"
)

// PodUnavailableBudgetSpec defines the desired state of PodUnavailableBudget.
// Exactly one of selector and targetRef, and exactly one of maxUnavailable and minAvailable, must be set.
// +kubebuilder:validation:XValidation:rule="has(self.selector) != has(self.targetRef)",message="exactly one of spec.selector and spec.targetRef must be set"
// +kubebuilder:validation:XValidation:rule="has(self.maxUnavailable) != has(self.minAvailable)",message="exactly one of spec.maxUnavailable and spec.minAvailable must be set"
type PodUnavailableBudgetSpec struct {
	// Selector is a label query over the pods protected by the budget.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// TargetReference names the workload whose pods the budget protects.
	// +optional
	TargetReference *TargetReference `json:"targetRef,omitempty"`

	// MaxUnavailable is the most pods selected by the budget that may be unavailable after a
	// protected operation: an absolute number or a percentage such as "20%".
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 0",message="must not be negative"
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MinAvailable is the fewest pods selected by the budget that must stay available after a
	// protected operation: an absolute number or a percentage such as "80%".
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 0",message="must not be negative"
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`
}

// TargetReference identifies a workload for a PodUnavailableBudget.
type TargetReference struct {
	// APIVersion of the referent.
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the referent.
	Kind string `json:"kind,omitempty"`
	// Name of the referent.
	Name string `json:"name,omitempty"`
}

// PodUnavailableBudgetStatus defines the observed state of PodUnavailableBudget.
type PodUnavailableBudgetStatus struct {
	// ObservedGeneration is the most recent generation observed when updating this status; the
	// other fields are valid only when it equals metadata.generation.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`

	// DisruptedPods records pods whose eviction or deletion was admitted but not yet observed,
	// keyed by pod name, with the admission time.
	// +optional
	DisruptedPods map[string]metav1.Time `json:"disruptedPods,omitempty"`

	// UnavailablePods records pods admitted for an in-place update, keyed by pod name, until they
	// are consistent and ready again.
	// +optional
	UnavailablePods map[string]metav1.Time `json:"unavailablePods,omitempty"`

	// UnavailableAllowed is the number of pods that may currently become unavailable.
	UnavailableAllowed int32 `json:"unavailableAllowed"`

	// CurrentAvailable is the current number of available pods.
	CurrentAvailable int32 `json:"currentAvailable"`

	// DesiredAvailable is the minimum desired number of available pods.
	DesiredAvailable int32 `json:"desiredAvailable"`

	// TotalReplicas is the total number of pods counted by the budget.
	TotalReplicas int32 `json:"totalReplicas"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pub
// +kubebuilder:printcolumn:name="Allowed",type="integer",JSONPath=".status.unavailableAllowed",description="UnavailableAllowed number of pod unavailable that are currently allowed"
// +kubebuilder:printcolumn:name="Current",type="integer",JSONPath=".status.currentAvailable",description="CurrentAvailable current number of available pods"
// +kubebuilder:printcolumn:name="Desired",type="integer",JSONPath=".status.desiredAvailable",description="DesiredAvailable minimum desired number of available pods"
// +kubebuilder:printcolumn:name="Total",type="integer",JSONPath=".status.totalReplicas",description="TotalReplicas total number of pods counted by this budget"

// PodUnavailableBudget limits how many of a set of pods may be unavailable at once because of
// deletion, eviction or in-place update.
type PodUnavailableBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodUnavailableBudgetSpec   `json:"spec,omitempty"`
	Status PodUnavailableBudgetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodUnavailableBudgetList contains a list of PodUnavailableBudget.
type PodUnavailableBudgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodUnavailableBudget `json:"items"`
}

func init() {
	register(&PodUnavailableBudget{}, &PodUnavailableBudgetList{})
}
