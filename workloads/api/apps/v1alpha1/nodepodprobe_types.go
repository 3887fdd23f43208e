package v1alpha1

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// containerProbeNameSeparator joins a PodProbeMarker name and a probe name. Object names never contain
// it, so the first occurrence always ends the marker name.
const containerProbeNameSeparator = "#"

// NodePodProbeSpec lists the probes the node agent runs on one node.
type NodePodProbeSpec struct {
	// podProbes holds one entry per probed pod on the node.
	// +optional
	PodProbes []PodProbe `json:"podProbes,omitempty"`
}

// PodProbe is the set of probes for one pod.
type PodProbe struct {
	// name of the pod.
	// +required
	Name string `json:"name"`
	// namespace of the pod.
	// +required
	Namespace string `json:"namespace"`
	// uid of the pod.
	// +required
	UID string `json:"uid"`
	// IP of the pod, the target of HTTP and TCP probes.
	// +required
	IP string `json:"IP"`
	// probes to run against the pod's containers.
	// +optional
	Probes []ContainerProbe `json:"probes,omitempty"`
}

// ContainerProbe is one probe of one container.
type ContainerProbe struct {
	// name is "<PodProbeMarker name>#<probe name>"; see ContainerProbeName.
	// +required
	Name string `json:"name"`
	// containerName is the container probed.
	// +required
	ContainerName string `json:"containerName"`
	// probe is the probe itself.
	// +required
	Probe ContainerProbeSpec `json:"probe"`
}

// NodePodProbeStatus is what the node agent reports about the probes of its node.
type NodePodProbeStatus struct {
	// podProbeStatuses holds the results per pod.
	// +optional
	PodProbeStatuses []PodProbeStatus `json:"podProbeStatuses,omitempty"`
}

// PodProbeStatus holds the probe results of one pod.
type PodProbeStatus struct {
	// name of the pod.
	// +required
	Name string `json:"name"`
	// namespace of the pod.
	// +required
	Namespace string `json:"namespace"`
	// uid of the pod.
	// +required
	UID string `json:"uid"`
	// probeStates holds one result per probe.
	// +optional
	ProbeStates []ContainerProbeState `json:"probeStates,omitempty"`
}

// ContainerProbeState is the latest result of one probe.
type ContainerProbeState struct {
	// name is "<PodProbeMarker name>#<probe name>".
	// +required
	Name string `json:"name"`
	// state is Succeeded, Failed or Unknown.
	// +required
	State ProbeState `json:"state"`
	// lastProbeTime is when the probe last ran.
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// lastTransitionTime is when the state last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// message is the probe's output on success or its error on failure.
	// +optional
	Message string `json:"message,omitempty"`
}

// ProbeState is the result of a probe.
type ProbeState string

const (
	// ProbeSucceeded means the probe passed.
	ProbeSucceeded ProbeState = "Succeeded"
	// ProbeFailed means the probe failed.
	ProbeFailed ProbeState = "Failed"
	// ProbeUnknown means the probe has no result yet.
	ProbeUnknown ProbeState = "Unknown"
)

// IsEqualPodConditionStatus reports whether the probe state matches a pod condition status:
// Succeeded is True, Failed is False and Unknown is anything else.
func (p ProbeState) IsEqualPodConditionStatus(status corev1.ConditionStatus) bool {
	switch status {
	case corev1.ConditionTrue:
		return p == ProbeSucceeded
	case corev1.ConditionFalse:
		return p == ProbeFailed
	default:
		return p == ProbeUnknown
	}
}

// ContainerProbeName is the NodePodProbe probe name for probe probeName of PodProbeMarker markerName.
func ContainerProbeName(markerName, probeName string) string {
	return markerName + containerProbeNameSeparator + probeName
}

// ParseContainerProbeName splits a NodePodProbe probe name into its PodProbeMarker name and probe name.
// ok is false when the name was not built by ContainerProbeName.
func ParseContainerProbeName(name string) (markerName, probeName string, ok bool) {
	markerName, probeName, ok = strings.Cut(name, containerProbeNameSeparator)
	if !ok || markerName == "" || probeName == "" {
		return "", "", false
	}
	return markerName, probeName, true
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster

// NodePodProbe holds the custom probes of the pods on one node; its name is the node's name.
type NodePodProbe struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodePodProbeSpec   `json:"spec,omitempty"`
	Status NodePodProbeStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NodePodProbeList is a list of NodePodProbes.
type NodePodProbeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePodProbe `json:"items"`
}

func init() {
	register(&NodePodProbe{}, &NodePodProbeList{})
}
