package gateway

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

var routeKind = schema.GroupKind{Group: gatewayv1.GroupName, Kind: "HTTPRoute"}

// servedVersion is v1 where the cluster serves it, else v1beta1 (Gateway API releases before v1.0).
func servedVersion(mapper meta.RESTMapper) (string, error) {
	mappings, err := mapper.RESTMappings(routeKind)
	if err != nil {
		return "", fmt.Errorf("finding the served versions of HTTPRoute: %w", err)
	}
	for _, v := range []string{gatewayv1.GroupVersion.Version, gatewayv1beta1.GroupVersion.Version} {
		if slices.ContainsFunc(mappings, func(m *meta.RESTMapping) bool { return m.GroupVersionKind.Version == v }) {
			return v, nil
		}
	}
	return "", fmt.Errorf("the cluster serves HTTPRoute in neither %s nor %s", gatewayv1.GroupVersion, gatewayv1beta1.GroupVersion)
}

// newRoute returns an empty HTTPRoute to read in version, and the v1 view the provider works on: v1beta1's
// HTTPRoute has the same fields, so both views share one value.
func newRoute(version string) (*gatewayv1.HTTPRoute, client.Object) {
	route := &gatewayv1.HTTPRoute{}
	if version == gatewayv1beta1.GroupVersion.Version {
		return route, (*gatewayv1beta1.HTTPRoute)(route)
	}
	return route, route
}
