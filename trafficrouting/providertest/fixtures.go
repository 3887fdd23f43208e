package providertest

import (
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// HeaderMatch is a single exact header match.
func HeaderMatch(name, value string) []rolloutsv1beta1.HttpRouteMatch {
	exact := gatewayv1.HeaderMatchExact
	return []rolloutsv1beta1.HttpRouteMatch{{Headers: []gatewayv1.HTTPHeaderMatch{
		{Type: &exact, Name: gatewayv1.HTTPHeaderName(name), Value: value},
	}}}
}
