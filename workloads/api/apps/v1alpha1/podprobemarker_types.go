package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// PodProbeMarkerFinalizer is put on a PodProbeMarker until its probes are removed from every NodePodProbe.
	PodProbeMarkerFinalizer = "kruise.io/node-pod-probe-cleanup"

	// PodProbeMarkerAnnotationKey is the pod annotation holding the JSON list of PodContainerProbe that
	// apply to the pod, for serverless nodes where no node agent runs the probes.
	PodProbeMarkerAnnotationKey = "kruise.io/podprobe"
	// PodProbeMarkerListAnnotationKey is the pod annotation listing, comma separated, the PodProbeMarkers
	// injected into the pod (serverless mode).
	PodProbeMarkerListAnnotationKey = "kruise.io/podprobemarker-list"
)

// PodProbeMarkerSpec is the desired state of a PodProbeMarker.
type PodProbeMarkerSpec struct {
	// selector picks the pods to probe, in the marker's namespace.
	// +required
	Selector *metav1.LabelSelector `json:"selector"`

	// probes are the custom probes run by the node agent. Each result is recorded as a pod condition
	// and may patch pod labels and annotations.
	// +required
	// +patchMergeKey=name
	// +patchStrategy=merge
	Probes []PodContainerProbe `json:"probes" patchStrategy:"merge" patchMergeKey:"name"`
}

// PodContainerProbe is one custom probe and what to do with its result.
type PodContainerProbe struct {
	// name of the probe, unique within the pod across all containers.
	// +required
	Name string `json:"name"`
	// containerName is the container the probe runs against.
	// +required
	ContainerName string `json:"containerName"`
	// probe is the probe itself.
	// +required
	Probe ContainerProbeSpec `json:"probe"`
	// markerPolicy patches pod labels and annotations per probe result. It and podConditionType cannot
	// both be empty.
	// +optional
	// +patchMergeKey=state
	// +patchStrategy=merge
	MarkerPolicy []ProbeMarkerPolicy `json:"markerPolicy,omitempty" patchStrategy:"merge" patchMergeKey:"state"`
	// podConditionType, when set, records the result as a pod condition of this type (True on success,
	// False on failure), for example game.kruise.io/healthy.
	// +optional
	PodConditionType string `json:"podConditionType,omitempty"`
}

// ContainerProbeSpec is a core Probe.
type ContainerProbeSpec struct {
	corev1.Probe `json:",inline"`
}

// ProbeMarkerPolicy is the pod metadata to apply for one probe result.
type ProbeMarkerPolicy struct {
	// state is the probe result this policy applies to: Succeeded or Failed. Without a Failed policy the
	// Succeeded policy's metadata is removed when the probe fails.
	// +required
	// +kubebuilder:validation:Enum=Succeeded;Failed
	State ProbeState `json:"state"`
	// labels to patch onto the pod.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations to patch onto the pod.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PodProbeMarkerStatus is the observed state of a PodProbeMarker.
type PodProbeMarkerStatus struct {
	// observedGeneration is the generation last processed by the controller.
	// +required
	ObservedGeneration int64 `json:"observedGeneration"`
	// matchedPods is the number of pods the selector matches.
	// +optional
	MatchedPods int64 `json:"matchedPods,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced

// PodProbeMarker defines custom probes for selected pods and how their results mark the pods.
type PodProbeMarker struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodProbeMarkerSpec   `json:"spec,omitempty"`
	Status PodProbeMarkerStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodProbeMarkerList is a list of PodProbeMarkers.
type PodProbeMarkerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodProbeMarker `json:"items"`
}

func init() {
	register(&PodProbeMarker{}, &PodProbeMarkerList{})
}
