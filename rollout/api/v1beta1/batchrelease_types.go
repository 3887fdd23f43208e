package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BatchReleaseSpec is the batch plan for one workload; a Rollout writes it, one step per batch.
type BatchReleaseSpec struct {
	// WorkloadRef identifies the released workload.
	// +optional
	WorkloadRef ObjectRef `json:"workloadRef,omitempty"`
	// ReleasePlan is how the workload is released.
	ReleasePlan ReleasePlan `json:"releasePlan"`
}

// BatchRelease releases a workload batch by batch. It carries the same name as the Rollout that owns it.
// The KIND column reads spec.workloadRef.kind, where this version keeps the workload reference.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="KIND",type=string,JSONPath=`.spec.workloadRef.kind`
// +kubebuilder:printcolumn:name="PHASE",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="BATCH",type=integer,JSONPath=`.status.canaryStatus.currentBatch`
// +kubebuilder:printcolumn:name="BATCH-STATE",type=string,JSONPath=`.status.canaryStatus.batchState`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=".metadata.creationTimestamp"
type BatchRelease struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BatchReleaseSpec   `json:"spec,omitempty"`
	Status BatchReleaseStatus `json:"status,omitempty"`
}

// BatchReleaseList contains a list of BatchRelease.
// +kubebuilder:object:root=true
type BatchReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BatchRelease `json:"items"`
}

// Hub marks BatchRelease v1beta1 as the version the other versions convert through.
func (*BatchRelease) Hub() {}

func init() {
	register(&BatchRelease{}, &BatchReleaseList{})
}
