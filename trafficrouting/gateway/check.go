package gateway

import (
	"fmt"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// check explains why a release cannot route through a route: no rule routes to the stable Service with an
// explicit kind: Service, or the route already sends traffic to the canary Service although no release changed
// it (finalizing would remove those backendRefs, so the route could not be restored).
func (b backends) check(s routeState) error {
	if err := b.checkStable(s.Rules); err != nil {
		return err
	}
	if s.Record == nil && b.routesToCanary(s.Rules) {
		return fmt.Errorf("a backendRef already routes to the canary Service %q; only a release may route to it", b.canary)
	}
	return nil
}

func (b backends) checkStable(rules []gatewayv1.HTTPRouteRule) error {
	named := false
	for _, rule := range rules {
		if b.refIndex(rule, b.stable) >= 0 {
			return nil
		}
		for _, ref := range rule.BackendRefs {
			named = named || b.namesStable(ref)
		}
	}
	if named {
		return fmt.Errorf("the backendRef to the stable Service %q needs kind: Service (and the core group) to be routed", b.stable)
	}
	return fmt.Errorf("no rule has a backendRef to the stable Service %q", b.stable)
}

func (b backends) routesToCanary(rules []gatewayv1.HTTPRouteRule) bool {
	for _, rule := range rules {
		if b.refIndex(rule, b.canary) >= 0 {
			return true
		}
	}
	return false
}

// namesStable: ref names the stable Service in the route's namespace, whatever its kind and group.
func (b backends) namesStable(ref gatewayv1.HTTPBackendRef) bool {
	ns := ref.Namespace
	return string(ref.Name) == b.stable && (ns == nil || string(*ns) == b.namespace)
}
