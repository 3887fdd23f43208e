package trafficrouting

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/trafficrouting"
)

// errGatewayRef: the Gateway API provider splits traffic between two Services (it refuses a Config whose
// CanaryService equals its StableService), and a TrafficRouting has only one, objectRef[0].service. So
// Gateway API objectRefs are rejected; a custom (Lua) object such as an Istio VirtualService, whose script
// sends the canary share to the "canary" subset of the same Service, is the intended use.
var errGatewayRef = errors.New("objectRef[0].gateway: an HTTPRoute can only split traffic between two Services, and a " +
	"TrafficRouting has no canary Service; use customNetworkRefs (e.g. an Istio VirtualService with a DestinationRule " +
	"subset named canary)")

// providerConfig is what the providers of objectRef[0] are built from. A TrafficRouting routes without a canary
// Service of its own: the canary "service" is the stable one (upstream's OnlyTrafficRouting).
func providerConfig(tr *rolloutsv1alpha1.TrafficRouting) (trafficrouting.Config, error) {
	if len(tr.Spec.ObjectRef) == 0 {
		return trafficrouting.Config{}, errors.New("spec.objectRef is empty")
	}
	ref := tr.Spec.ObjectRef[0]
	if ref.Gateway != nil {
		return trafficrouting.Config{}, errGatewayRef
	}
	return trafficrouting.Config{
		Namespace:     tr.Namespace,
		Owner:         *metav1.NewControllerRef(tr, rolloutsv1alpha1.GroupVersion.WithKind("TrafficRouting")),
		StableService: ref.Service,
		CanaryService: ref.Service,
		Ref:           rolloutsv1alpha1.TrafficRoutingRefToV1beta1(&ref),
	}, nil
}

// routesOf is the Routes of spec.strategy.
func routesOf(s rolloutsv1alpha1.TrafficRoutingStrategy) (trafficrouting.Routes, error) {
	if s.Weight != nil && (*s.Weight < 0 || *s.Weight > 100) {
		return trafficrouting.Routes{}, fmt.Errorf("spec.strategy.weight %d is not between 0 and 100", *s.Weight)
	}
	r := trafficrouting.Routes{RequestHeaderModifier: s.RequestHeaderModifier.DeepCopy()}
	if s.Weight != nil {
		w := *s.Weight
		r.Weight = &w
	}
	for _, m := range s.Matches {
		r.Matches = append(r.Matches, rolloutsv1beta1.HttpRouteMatch{Headers: slices.Clone(m.Headers)})
	}
	return r, nil
}

// routesNothing: a strategy with neither weight nor matches sends nothing to the canary (upstream leaves the
// routes alone; here they are kept original, which is the same on a fresh object and level-based after a
// change of the strategy).
func routesNothing(r trafficrouting.Routes) bool {
	return r.Weight == nil && len(r.Matches) == 0
}

// describeRoutes is the routes in status messages; empty when they route nothing.
func describeRoutes(r trafficrouting.Routes) string {
	if routesNothing(r) {
		return ""
	}
	return r.String()
}

// heldByRollout reports whether some Rollout holds a progressing.rollouts.kruise.io/<rollout> finalizer.
func heldByRollout(finalizers []string) bool {
	for _, f := range finalizers {
		if strings.HasPrefix(f, rolloutsv1beta1.ProgressingRolloutFinalizerPrefix+"/") {
			return true
		}
	}
	return false
}

// gracePeriod is objectRef[0].gracePeriodSeconds.
func gracePeriod(spec rolloutsv1alpha1.TrafficRoutingSpec) time.Duration {
	if len(spec.ObjectRef) == 0 {
		return 0
	}
	return time.Duration(max(spec.ObjectRef[0].GracePeriodSeconds, 0)) * time.Second
}
