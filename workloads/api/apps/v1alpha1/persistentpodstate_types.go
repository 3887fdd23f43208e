package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations on a (StatefulSet) workload that make the manager create and maintain a
// PersistentPodState for it, and the annotation on pods it has been applied to.
const (
	// AnnotationAutoGeneratePersistentPodState "true" asks for a PersistentPodState to be generated;
	// it needs AnnotationRequiredPersistentTopology or AnnotationPreferredPersistentTopology.
	AnnotationAutoGeneratePersistentPodState = "kruise.io/auto-generate-persistent-pod-state"
	// AnnotationRequiredPersistentTopology lists node label keys, comma-separated (e.g.
	// "topology.kubernetes.io/zone"), that a recreated pod must keep.
	AnnotationRequiredPersistentTopology = "kruise.io/required-persistent-topology"
	// AnnotationPreferredPersistentTopology lists node label keys, comma-separated, that a recreated
	// pod should keep (weight 100).
	AnnotationPreferredPersistentTopology = "kruise.io/preferred-persistent-topology"
	// AnnotationPersistentPodAnnotations lists pod annotation keys, comma-separated (e.g.
	// "cni.projectcalico.org/podIP"), whose values are carried over to the recreated pod.
	AnnotationPersistentPodAnnotations = "kruise.io/persistent-pod-annotations"

	// InjectedPersistentPodStateKey on a pod records that its node affinity was set from a
	// PersistentPodState at creation.
	InjectedPersistentPodStateKey = "kruise.io/injected-persistent-pod-state"
)

// PersistentPodStateSpec defines the desired state of PersistentPodState.
type PersistentPodStateSpec struct {
	// TargetReference is the workload whose pods' state is kept; only StatefulSets (native and
	// Advanced) are supported.
	TargetReference TargetReference `json:"targetRef"`

	// PersistentPodAnnotations are the pod annotations to keep across pod recreation.
	// +optional
	PersistentPodAnnotations []PersistentPodAnnotation `json:"persistentPodAnnotations,omitempty"`

	// RequiredPersistentTopology are node label keys a recreated pod must match again
	// (e.g. kubernetes.io/hostname, topology.kubernetes.io/zone).
	// +optional
	RequiredPersistentTopology *NodeTopologyTerm `json:"requiredPersistentTopology,omitempty"`

	// PreferredPersistentTopology are weighted node label keys a recreated pod should match again.
	// +optional
	PreferredPersistentTopology []PreferredTopologyTerm `json:"preferredPersistentTopology,omitempty"`

	// PersistentPodStateRetentionPolicy decides when a pod's record is dropped. Defaults to WhenScaled.
	// +optional
	// +kubebuilder:validation:Enum=WhenScaled;WhenDeleted;""
	PersistentPodStateRetentionPolicy PersistentPodStateRetentionPolicyType `json:"persistentPodStateRetentionPolicy,omitempty"`
}

// PreferredTopologyTerm is a weighted NodeTopologyTerm.
type PreferredTopologyTerm struct {
	Weight     int32            `json:"weight"`
	Preference NodeTopologyTerm `json:"preference"`
}

// NodeTopologyTerm lists node label keys.
type NodeTopologyTerm struct {
	// NodeTopologyKeys are node label keys.
	NodeTopologyKeys []string `json:"nodeTopologyKeys"`
}

// PersistentPodAnnotation names a pod annotation to keep.
type PersistentPodAnnotation struct {
	Key string `json:"key"`
}

// PersistentPodStateRetentionPolicyType decides when pod records are dropped.
type PersistentPodStateRetentionPolicyType string

const (
	// PersistentPodStateRetentionPolicyWhenScaled drops a pod's record when the workload scales it away.
	PersistentPodStateRetentionPolicyWhenScaled PersistentPodStateRetentionPolicyType = "WhenScaled"
	// PersistentPodStateRetentionPolicyWhenDeleted keeps records until the workload is deleted.
	PersistentPodStateRetentionPolicyWhenDeleted PersistentPodStateRetentionPolicyType = "WhenDeleted"
)

// PersistentPodStateStatus defines the observed state of PersistentPodState.
type PersistentPodStateStatus struct {
	// ObservedGeneration is the most recent generation observed for this PersistentPodState.
	ObservedGeneration int64 `json:"observedGeneration"`
	// PodStates records, per pod name, the state of the pod when it was last ready.
	// +optional
	PodStates map[string]PodState `json:"podStates,omitempty"`
}

// PodState is the recorded state of one pod.
type PodState struct {
	// NodeName is the pod's spec.nodeName.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// NodeTopologyLabels are the node's labels for the configured topology keys.
	// +optional
	NodeTopologyLabels map[string]string `json:"nodeTopologyLabels,omitempty"`
	// Annotations are the pod's values of the configured annotation keys.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// PersistentPodState keeps node topology and selected annotations of a StatefulSet's pods, so a
// recreated pod lands where its predecessor was and keeps its annotations (e.g. a fixed IP).
type PersistentPodState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PersistentPodStateSpec   `json:"spec,omitempty"`
	Status PersistentPodStateStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PersistentPodStateList contains a list of PersistentPodState.
type PersistentPodStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PersistentPodState `json:"items"`
}

func init() {
	register(&PersistentPodState{}, &PersistentPodStateList{})
}
