package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Annotations on every copy a ResourceDistribution writes into a target namespace.
const (
	// ResourceDistributionSourceAnnotation names the ResourceDistribution that owns the copy; a
	// same-named object without it is a conflict and is left alone.
	ResourceDistributionSourceAnnotation = "kruise.io/resourcedistribution.resource.from"
	// ResourceDistributionHashCodeAnnotation is the hex SHA-256 of spec.resource the copy was written
	// from; the copy is rewritten only when it differs.
	ResourceDistributionHashCodeAnnotation = "kruise.io/resourcedistribution.resource.hashcode"
)

// ResourceDistributionSpec defines the desired state of ResourceDistribution.
type ResourceDistributionSpec struct {
	// Resource is the complete object to distribute (apiVersion, kind, metadata.name and content);
	// only Secret and ConfigMap are supported.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	Resource runtime.RawExtension `json:"resource"`

	// Targets selects the namespaces to distribute to.
	Targets ResourceDistributionTargets `json:"targets"`
}

// ResourceDistributionTargets selects target namespaces: the union of allNamespaces,
// includedNamespaces and namespaceLabelSelector, minus excludedNamespaces. kube-system and
// kube-public are never targets.
type ResourceDistributionTargets struct {
	// AllNamespaces targets every namespace.
	// +optional
	AllNamespaces bool `json:"allNamespaces,omitempty"`

	// ExcludedNamespaces are never targets; they win over every other rule.
	// +optional
	ExcludedNamespaces ResourceDistributionTargetNamespaces `json:"excludedNamespaces,omitempty"`

	// IncludedNamespaces are targets.
	// +optional
	IncludedNamespaces ResourceDistributionTargetNamespaces `json:"includedNamespaces,omitempty"`

	// NamespaceLabelSelector selects target namespaces by label.
	// +optional
	NamespaceLabelSelector metav1.LabelSelector `json:"namespaceLabelSelector,omitempty"`
}

// ResourceDistributionTargetNamespaces is a list of namespace names.
type ResourceDistributionTargetNamespaces struct {
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	List []ResourceDistributionNamespace `json:"list,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
}

// ResourceDistributionNamespace names a namespace.
type ResourceDistributionNamespace struct {
	// Name of the namespace.
	// +optional
	Name string `json:"name,omitempty"`
}

// ResourceDistributionStatus defines the observed state of ResourceDistribution; written by the
// controller only.
type ResourceDistributionStatus struct {
	// Desired is the number of target namespaces.
	// +optional
	Desired int32 `json:"desired,omitempty"`

	// Succeeded is the number of namespaces holding an up-to-date copy.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`

	// Failed is the number of namespaces whose copy could not be written.
	// +optional
	Failed int32 `json:"failed,omitempty"`

	// ObservedGeneration is the metadata.generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions report failures while creating, updating and deleting copies.
	// +optional
	Conditions []ResourceDistributionCondition `json:"conditions,omitempty"`
}

// ResourceDistributionCondition reports one kind of distribution failure.
type ResourceDistributionCondition struct {
	// Type of the condition.
	Type ResourceDistributionConditionType `json:"type"`

	// Status of the condition: True, False or Unknown.
	Status ResourceDistributionConditionStatus `json:"status"`

	// LastTransitionTime is when the status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// Reason is a human-readable explanation of the last transition.
	// +optional
	Reason string `json:"reason,omitempty"`

	// FailedNamespaces are the namespaces where the failure happened.
	// +optional
	FailedNamespaces []string `json:"failedNamespace,omitempty"`
}

// ResourceDistributionConditionType is the type of a ResourceDistributionCondition.
type ResourceDistributionConditionType string

const (
	// ResourceDistributionConflictOccurred: a same-named object not owned by the distribution exists.
	ResourceDistributionConflictOccurred ResourceDistributionConditionType = "ConflictOccurred"
	// ResourceDistributionNamespaceNotExists: a listed target namespace does not exist.
	ResourceDistributionNamespaceNotExists ResourceDistributionConditionType = "NamespaceNotExists"
	// ResourceDistributionGetResourceFailed: reading a copy failed.
	ResourceDistributionGetResourceFailed ResourceDistributionConditionType = "GetResourceFailed"
	// ResourceDistributionCreateResourceFailed: creating a copy failed.
	ResourceDistributionCreateResourceFailed ResourceDistributionConditionType = "CreateResourceFailed"
	// ResourceDistributionUpdateResourceFailed: updating a copy failed.
	ResourceDistributionUpdateResourceFailed ResourceDistributionConditionType = "UpdateResourceFailed"
	// ResourceDistributionDeleteResourceFailed: deleting a copy from a namespace no longer targeted failed.
	ResourceDistributionDeleteResourceFailed ResourceDistributionConditionType = "DeleteResourceFailed"
)

// ResourceDistributionConditionStatus is True, False or Unknown.
type ResourceDistributionConditionStatus string

const (
	// ResourceDistributionConditionTrue means the condition holds.
	ResourceDistributionConditionTrue ResourceDistributionConditionStatus = "True"
	// ResourceDistributionConditionFalse means it does not.
	ResourceDistributionConditionFalse ResourceDistributionConditionStatus = "False"
	// ResourceDistributionConditionUnknown means it cannot be decided.
	ResourceDistributionConditionUnknown ResourceDistributionConditionStatus = "Unknown"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=distributor
// +kubebuilder:printcolumn:name="TOTAL",type="integer",JSONPath=".status.desired",description="The desired number of desired distribution and syncs."
// +kubebuilder:printcolumn:name="SUCCEED",type="integer",JSONPath=".status.succeeded",description="The number of successful distribution and syncs."
// +kubebuilder:printcolumn:name="FAILED",type="integer",JSONPath=".status.failed",description="The number of failed distributions and syncs."

// ResourceDistribution copies a Secret or ConfigMap into many namespaces and keeps the copies in sync.
type ResourceDistribution struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ResourceDistributionSpec   `json:"spec,omitempty"`
	Status ResourceDistributionStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ResourceDistributionList contains a list of ResourceDistribution.
type ResourceDistributionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceDistribution `json:"items"`
}

func init() {
	register(&ResourceDistribution{}, &ResourceDistributionList{})
}
