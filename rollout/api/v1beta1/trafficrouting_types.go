package v1beta1

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
	CustomNetworkRefs []ObjectRef `json:"customNetworkRefs,omitempty"`
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
