package promoted

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// SidecarSetSpec defines the desired state of SidecarSet. It is v1alpha1's without namespace (use
// namespaceSelector) and with customVersion, which v1alpha1 keeps in a label.
type SidecarSetSpec struct {
	// Selector is a label query over the pods to inject.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// NamespaceSelector selects the namespaces whose pods are injected; nil matches every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// InitContainers are injected into selected pods at creation only, sorted by name and appended
	// after the pod's own init containers.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	InitContainers []kruiseappsv1alpha1.SidecarContainer `json:"initContainers,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// Containers are the sidecar containers injected into selected pods.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	Containers []kruiseappsv1alpha1.SidecarContainer `json:"containers,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// Volumes that the sidecar containers may mount; merged into the pod's volumes.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +patchMergeKey=name
	// +patchStrategy=merge
	Volumes []corev1.Volume `json:"volumes,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// UpdateStrategy controls how sidecars already injected into pods are updated in place.
	// +optional
	UpdateStrategy kruiseappsv1alpha1.SidecarSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// InjectionStrategy controls injection into newly created pods.
	// +optional
	InjectionStrategy kruiseappsv1alpha1.SidecarSetInjectionStrategy `json:"injectionStrategy,omitempty"`

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
	PatchPodMetadata []kruiseappsv1alpha1.SidecarSetPatchPodMetadata `json:"patchPodMetadata,omitempty"`

	// CustomVersion is copied to the SidecarSet's ControllerRevisions, so that
	// injectionStrategy.revision.customVersion can name a revision by it.
	// +optional
	CustomVersion string `json:"customVersion,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="MATCHED",type="integer",JSONPath=".status.matchedPods",description="The number of pods matched."
// +kubebuilder:printcolumn:name="UPDATED",type="integer",JSONPath=".status.updatedPods",description="The number of pods matched and updated."
// +kubebuilder:printcolumn:name="READY",type="integer",JSONPath=".status.readyPods",description="The number of pods matched and ready."
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp",description="CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."

// SidecarSet injects sidecar containers into matching pods at creation and updates them in place.
type SidecarSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SidecarSetSpec                      `json:"spec,omitempty"`
	Status kruiseappsv1alpha1.SidecarSetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SidecarSetList is a list of SidecarSets.
type SidecarSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SidecarSet `json:"items"`
}
