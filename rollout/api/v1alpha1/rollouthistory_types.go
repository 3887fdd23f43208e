package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RolloutHistoryPhaseCompleted is the only non-empty RolloutHistory phase.
const RolloutHistoryPhaseCompleted = "completed"

// RolloutHistorySpec is a snapshot of the objects of one release.
type RolloutHistorySpec struct {
	// Rollout is the Rollout of the release.
	// +optional
	Rollout RolloutInfo `json:"rollout,omitempty"`
	// Workload is the released workload.
	// +optional
	Workload WorkloadInfo `json:"workload,omitempty"`
	// Service is the stable Service.
	// +optional
	Service ServiceInfo `json:"service,omitempty"`
	// TrafficRouting is the Ingress or HTTPRoute of the release.
	// +optional
	TrafficRouting TrafficRoutingInfo `json:"trafficRouting,omitempty"`
}

// NameAndSpecData is the name of an object and a snapshot of its spec.
type NameAndSpecData struct {
	// Name of the object.
	Name string `json:"name"`
	// Data is the snapshot, kept as is.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Data runtime.RawExtension `json:"data,omitempty"`
}

// RolloutInfo is the Rollout of a release.
type RolloutInfo struct {
	// RolloutID of the release.
	RolloutID       string `json:"rolloutID"`
	NameAndSpecData `json:",inline"`
}

// ServiceInfo is the stable Service of a release.
type ServiceInfo struct {
	NameAndSpecData `json:",inline"`
}

// TrafficRoutingInfo is the routing object of a release.
type TrafficRoutingInfo struct {
	// IngressRef is the Ingress.
	// +optional
	IngressRef *IngressInfo `json:"ingress,omitempty"`
	// HTTPRouteRef is the Gateway API HTTPRoute.
	// +optional
	HTTPRouteRef *HTTPRouteInfo `json:"httpRoute,omitempty"`
}

// IngressInfo is an Ingress of a release.
type IngressInfo struct {
	NameAndSpecData `json:",inline"`
}

// HTTPRouteInfo is an HTTPRoute of a release.
type HTTPRouteInfo struct {
	NameAndSpecData `json:",inline"`
}

// WorkloadInfo is the workload of a release.
type WorkloadInfo struct {
	metav1.TypeMeta `json:",inline"`
	NameAndSpecData `json:",inline"`
}

// RolloutHistoryStatus is the observed state of a RolloutHistory.
type RolloutHistoryStatus struct {
	// Phase is "" while recording and "completed" afterwards.
	// +optional
	Phase string `json:"phase,omitempty"`
	// CanarySteps are the pods each step released.
	// +optional
	CanarySteps []CanaryStepInfo `json:"canarySteps,omitempty"`
}

// CanaryStepInfo lists the pods of one step.
type CanaryStepInfo struct {
	// CanaryStepIndex is the 1-based step.
	// +optional
	CanaryStepIndex int32 `json:"canaryStepIndex,omitempty"`
	// Pods released by the step.
	// +optional
	Pods []Pod `json:"pods,omitempty"`
}

// Pod identifies a released pod.
type Pod struct {
	// Name of the pod.
	// +optional
	Name string `json:"name,omitempty"`
	// IP of the pod.
	// +optional
	IP string `json:"ip,omitempty"`
	// NodeName is the node the pod runs on.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
}

// RolloutHistory records one release of a Rollout: the objects involved and the pods of each step.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced
type RolloutHistory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RolloutHistorySpec   `json:"spec,omitempty"`
	Status RolloutHistoryStatus `json:"status,omitempty"`
}

// RolloutHistoryList contains a list of RolloutHistory.
// +kubebuilder:object:root=true
type RolloutHistoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RolloutHistory `json:"items"`
}

func init() {
	register(&RolloutHistory{}, &RolloutHistoryList{})
}
