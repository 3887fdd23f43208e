package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// ProgressingRolloutFinalizerPrefix prefixes the finalizer a progressing Rollout puts on its
// TrafficRouting ("progressing.rollouts.kruise.io/<rollout>").
const ProgressingRolloutFinalizerPrefix = rolloutsv1beta1.ProgressingRolloutFinalizerPrefix

// TrafficRoutingRef configures the traffic providers of a release.
type TrafficRoutingRef struct {
	// Service selects the stable pods; the canary Service "<service>-canary" is derived from it.
	Service string `json:"service"`
	// GracePeriodSeconds is waited after every routing change so that providers pick it up.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	GracePeriodSeconds int32 `json:"gracePeriodSeconds,omitempty"`
	// Ingress routes traffic through an Ingress (nginx, aliyun-alb, higress, mse, ...).
	// +optional
	Ingress *IngressTrafficRouting `json:"ingress,omitempty"`
	// Gateway routes traffic through a Gateway API HTTPRoute.
	// +optional
	Gateway *GatewayTrafficRouting `json:"gateway,omitempty"`
	// CustomNetworkRefs route traffic through arbitrary objects transformed by Lua scripts.
	// +optional
	CustomNetworkRefs []CustomNetworkRef `json:"customNetworkRefs,omitempty"`
}

// IngressTrafficRouting configures ingress-based routing.
type IngressTrafficRouting struct {
	// ClassType selects the ingress script (nginx, aliyun-alb, ...); empty means nginx.
	// +optional
	ClassType string `json:"classType,omitempty"`
	// Name of the Ingress in the Rollout's namespace.
	Name string `json:"name"`
}

// GatewayTrafficRouting configures Gateway API routing.
type GatewayTrafficRouting struct {
	// HTTPRouteName is the name of the HTTPRoute in the Rollout's namespace.
	// +optional
	HTTPRouteName *string `json:"httpRouteName,omitempty"`
}

// CustomNetworkRef references an object routed by a Lua script.
type CustomNetworkRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// TrafficRoutingStrategy is the traffic sent to the new revision.
type TrafficRoutingStrategy struct {
	// Weight is the percentage of traffic routed to the new revision.
	// +optional
	Weight *int32 `json:"weight,omitempty"`
	// RequestHeaderModifier rewrites request headers (set, add, remove) of the routed requests.
	// +optional
	RequestHeaderModifier *gatewayv1.HTTPHeaderFilter `json:"requestHeaderModifier,omitempty"`
	// Matches route requests to the new revision when any one of them matches. When both matches and
	// weight are set, matches take precedence.
	// +optional
	Matches []HttpRouteMatch `json:"matches,omitempty"`
}

// TrafficRoutingSpec is the desired state of a TrafficRouting.
type TrafficRoutingSpec struct {
	// ObjectRef lists the routing configurations the TrafficRouting drives.
	ObjectRef []TrafficRoutingRef `json:"objectRef"`
	// Strategy is the traffic applied while a Rollout progresses.
	Strategy TrafficRoutingStrategy `json:"strategy"`
}

// TrafficRoutingStatus is the observed state of a TrafficRouting.
type TrafficRoutingStatus struct {
	// ObservedGeneration is the most recent generation observed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase of the TrafficRouting.
	// +optional
	Phase TrafficRoutingPhase `json:"phase,omitempty"`
	// Message tells why the TrafficRouting is in its phase.
	// +optional
	Message string `json:"message,omitempty"`
}

// TrafficRoutingPhase is the phase of a TrafficRouting.
type TrafficRoutingPhase string

// TrafficRouting phases.
const (
	// TrafficRoutingPhaseInitial: not yet checked.
	TrafficRoutingPhaseInitial TrafficRoutingPhase = "Initial"
	// TrafficRoutingPhaseHealthy: the routed objects exist and no Rollout drives it.
	TrafficRoutingPhaseHealthy TrafficRoutingPhase = "Healthy"
	// TrafficRoutingPhaseProgressing: a Rollout drives it.
	TrafficRoutingPhaseProgressing TrafficRoutingPhase = "Progressing"
	// TrafficRoutingPhaseFinalizing: routes are being restored.
	TrafficRoutingPhaseFinalizing TrafficRoutingPhase = "Finalizing"
	// TrafficRoutingPhaseTerminating: the TrafficRouting is being deleted.
	TrafficRoutingPhaseTerminating TrafficRoutingPhase = "Terminating"
)

// TrafficRouting routes traffic for several workloads released together (e.g. a call chain of
// microservices); Rollouts opt in with the annotation rollouts.kruise.io/trafficrouting.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="STATUS",type="string",JSONPath=".status.phase",description="The TrafficRouting status phase"
// +kubebuilder:printcolumn:name="MESSAGE",type="string",JSONPath=".status.message",description="The TrafficRouting canary status message"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=".metadata.creationTimestamp"
type TrafficRouting struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TrafficRoutingSpec   `json:"spec,omitempty"`
	Status TrafficRoutingStatus `json:"status,omitempty"`
}

// TrafficRoutingList contains a list of TrafficRouting.
// +kubebuilder:object:root=true
type TrafficRoutingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TrafficRouting `json:"items"`
}

func init() {
	register(&TrafficRouting{}, &TrafficRoutingList{})
}
