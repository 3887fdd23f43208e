package gateway

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/trafficrouting"
)

func TestCheck(t *testing.T) {
	noKind := ref("web", nil)
	noKind.Kind = nil
	serviceImport := ref("web", nil)
	serviceImport.Group = ptr.To(gatewayv1.Group("multicluster.x-k8s.io"))
	serviceImport.Kind = ptr.To(gatewayv1.Kind("ServiceImport"))
	root := matches(prefix("/"))
	cases := []struct {
		name    string
		state   routeState
		wantErr string
	}{
		{name: "routes to the stable Service", state: routeState{Rules: []gatewayv1.HTTPRouteRule{rule(root, ref("other", nil)), rule(root, ref("web", nil))}}},
		{name: "a release's own changes", state: routeState{Rules: []gatewayv1.HTTPRouteRule{rule(root, ref("web", nil), ref("web-canary", nil))}, Record: record("[1]")}},
		{name: "no rule", wantErr: `no rule has a backendRef to the stable Service "web"`},
		{name: "other Services only", state: routeState{Rules: []gatewayv1.HTTPRouteRule{rule(root, ref("other", nil))}}, wantErr: "no rule has a backendRef"},
		{name: "backendRef without kind", state: routeState{Rules: []gatewayv1.HTTPRouteRule{rule(root, noKind)}}, wantErr: "needs kind: Service"},
		{name: "backendRef of another kind", state: routeState{Rules: []gatewayv1.HTTPRouteRule{rule(root, serviceImport)}}, wantErr: "needs kind: Service"},
		{
			name:    "already routing to the canary Service",
			state:   routeState{Rules: []gatewayv1.HTTPRouteRule{rule(root, ref("web", nil)), rule(root, ref("web-canary", nil))}},
			wantErr: `already routes to the canary Service "web-canary"`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := testBackends.check(c.state)
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("check: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("check: %v, want an error with %q", err, c.wantErr)
			}
		})
	}
}

func TestServedVersion(t *testing.T) {
	mapper := func(versions ...string) meta.RESTMapper {
		var gvs []schema.GroupVersion
		for _, v := range versions {
			gvs = append(gvs, schema.GroupVersion{Group: gatewayv1.GroupName, Version: v})
		}
		m := meta.NewDefaultRESTMapper(gvs)
		for _, gv := range gvs {
			m.Add(gv.WithKind("HTTPRoute"), meta.RESTScopeNamespace)
		}
		return m
	}
	cases := []struct {
		name     string
		versions []string
		want     string
	}{
		{name: "v1 and v1beta1", versions: []string{"v1", "v1beta1"}, want: "v1"},
		{name: "v1beta1 preferred", versions: []string{"v1beta1", "v1"}, want: "v1"},
		{name: "v1beta1 only", versions: []string{"v1beta1"}, want: "v1beta1"},
		{name: "v1alpha2 only", versions: []string{"v1alpha2"}},
		{name: "none"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := servedVersion(mapper(c.versions...))
			if got != c.want || (err == nil) != (c.want != "") {
				t.Errorf("servedVersion = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestFactory(t *testing.T) {
	gateway := func(name *string) rolloutsv1beta1.TrafficRoutingRef {
		return rolloutsv1beta1.TrafficRoutingRef{Gateway: &rolloutsv1beta1.GatewayTrafficRouting{HTTPRouteName: name}}
	}
	cfg := func(ref rolloutsv1beta1.TrafficRoutingRef, canary string) trafficrouting.Config {
		return trafficrouting.Config{Namespace: "ns", StableService: "web", CanaryService: canary, Ref: ref}
	}
	cases := []struct {
		name         string
		cfg          trafficrouting.Config
		wantProvider bool
		wantErr      string
	}{
		{name: "no gateway", cfg: cfg(rolloutsv1beta1.TrafficRoutingRef{}, "web-canary")},
		{name: "gateway", cfg: cfg(gateway(ptr.To("route")), "web-canary"), wantProvider: true},
		{name: "no route name", cfg: cfg(gateway(nil), "web-canary"), wantErr: "httpRouteName is required"},
		{name: "empty route name", cfg: cfg(gateway(ptr.To("")), "web-canary"), wantErr: "httpRouteName is required"},
		{name: "no canary Service", cfg: cfg(gateway(ptr.To("route")), "web"), wantErr: "canary Service other than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Factory(nil, nil)(c.cfg)
			if (p != nil) != c.wantProvider {
				t.Errorf("provider = %v, want one: %v", p, c.wantProvider)
			}
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Errorf("error = %v, want %q", err, c.wantErr)
			}
		})
	}
}
