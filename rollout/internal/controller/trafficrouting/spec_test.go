package trafficrouting

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/trafficrouting"
)

func trafficRouting(refs ...rolloutsv1alpha1.TrafficRoutingRef) *rolloutsv1alpha1.TrafficRouting {
	return &rolloutsv1alpha1.TrafficRouting{
		ObjectMeta: metav1.ObjectMeta{Name: "chain", Namespace: "ns", UID: "uid-1"},
		Spec:       rolloutsv1alpha1.TrafficRoutingSpec{ObjectRef: refs},
	}
}

func TestProviderConfig(t *testing.T) {
	vs := rolloutsv1alpha1.TrafficRoutingRef{
		Service: "web", GracePeriodSeconds: 5,
		Ingress:           &rolloutsv1alpha1.IngressTrafficRouting{ClassType: "mse", Name: "web"},
		CustomNetworkRefs: []rolloutsv1alpha1.CustomNetworkRef{{APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Name: "web"}},
	}
	cfg, err := providerConfig(trafficRouting(vs, rolloutsv1alpha1.TrafficRoutingRef{Service: "ignored"}))
	if err != nil {
		t.Fatal(err)
	}
	want := trafficrouting.Config{
		Namespace: "ns",
		Owner: metav1.OwnerReference{APIVersion: "rollouts.kruise.io/v1alpha1", Kind: "TrafficRouting", Name: "chain", UID: "uid-1",
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
		StableService: "web", CanaryService: "web",
		Ref: rolloutsv1beta1.TrafficRoutingRef{
			Service: "web", GracePeriodSeconds: 5,
			Ingress:           &rolloutsv1beta1.IngressTrafficRouting{ClassType: "mse", Name: "web"},
			CustomNetworkRefs: []rolloutsv1beta1.ObjectRef{{APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Name: "web"}},
		},
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestProviderConfigRejects(t *testing.T) {
	if _, err := providerConfig(trafficRouting()); err == nil {
		t.Error("no objectRef: no error")
	}
	gw := rolloutsv1alpha1.TrafficRoutingRef{Service: "web", Gateway: &rolloutsv1alpha1.GatewayTrafficRouting{HTTPRouteName: ptr.To("web")}}
	if _, err := providerConfig(trafficRouting(gw)); !errors.Is(err, errGatewayRef) {
		t.Errorf("gateway objectRef: %v, want %v", err, errGatewayRef)
	}
}

func TestRoutesOf(t *testing.T) {
	exact := gatewayv1.HeaderMatchExact
	header := gatewayv1.HTTPHeaderMatch{Type: &exact, Name: "user-agent", Value: "pc"}
	modifier := &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "x-canary", Value: "1"}}}
	tests := []struct {
		name    string
		in      rolloutsv1alpha1.TrafficRoutingStrategy
		want    trafficrouting.Routes
		nothing bool
		wantErr bool
	}{
		{"empty", rolloutsv1alpha1.TrafficRoutingStrategy{}, trafficrouting.Routes{}, true, false},
		{"weight", rolloutsv1alpha1.TrafficRoutingStrategy{Weight: ptr.To[int32](20)}, trafficrouting.Routes{Weight: ptr.To[int32](20)}, false, false},
		{"zero weight routes", rolloutsv1alpha1.TrafficRoutingStrategy{Weight: ptr.To[int32](0)}, trafficrouting.Routes{Weight: ptr.To[int32](0)}, false, false},
		{"matches and modifier",
			rolloutsv1alpha1.TrafficRoutingStrategy{Matches: []rolloutsv1alpha1.HttpRouteMatch{{Headers: []gatewayv1.HTTPHeaderMatch{header}}}, RequestHeaderModifier: modifier},
			trafficrouting.Routes{Matches: []rolloutsv1beta1.HttpRouteMatch{{Headers: []gatewayv1.HTTPHeaderMatch{header}}}, RequestHeaderModifier: modifier},
			false, false},
		{"weight over 100", rolloutsv1alpha1.TrafficRoutingStrategy{Weight: ptr.To[int32](101)}, trafficrouting.Routes{}, false, true},
		{"negative weight", rolloutsv1alpha1.TrafficRoutingStrategy{Weight: ptr.To[int32](-1)}, trafficrouting.Routes{}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := routesOf(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("routes (-want +got):\n%s", diff)
			}
			if routesNothing(got) != tt.nothing || (describeRoutes(got) == "") != tt.nothing {
				t.Errorf("routes nothing = %v, description %q; want nothing %v", routesNothing(got), describeRoutes(got), tt.nothing)
			}
		})
	}
}

func TestHeldByRollout(t *testing.T) {
	tests := []struct {
		finalizers []string
		want       bool
	}{
		{nil, false},
		{[]string{rolloutsv1beta1.TrafficRoutingFinalizer}, false},
		{[]string{rolloutsv1beta1.TrafficRoutingFinalizer, rolloutsv1beta1.ProgressingRolloutFinalizer("demo")}, true},
		{[]string{"progressing.rollouts.kruise.io"}, false},
		{[]string{"other.progressing.rollouts.kruise.io/demo"}, false},
	}
	for _, tt := range tests {
		if got := heldByRollout(tt.finalizers); got != tt.want {
			t.Errorf("heldByRollout(%v) = %v, want %v", tt.finalizers, got, tt.want)
		}
	}
}

func TestGracePeriod(t *testing.T) {
	if got := gracePeriod(rolloutsv1alpha1.TrafficRoutingSpec{}); got != 0 {
		t.Errorf("no objectRef: %v", got)
	}
	spec := trafficRouting(rolloutsv1alpha1.TrafficRoutingRef{GracePeriodSeconds: 4}, rolloutsv1alpha1.TrafficRoutingRef{GracePeriodSeconds: 9}).Spec
	if got := gracePeriod(spec); got != 4*time.Second {
		t.Errorf("grace = %v, want objectRef[0]'s 4s", got)
	}
	spec.ObjectRef[0].GracePeriodSeconds = -3
	if got := gracePeriod(spec); got != 0 {
		t.Errorf("negative grace = %v, want 0", got)
	}
}
