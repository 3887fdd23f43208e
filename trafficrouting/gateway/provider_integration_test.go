package gateway

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/trafficrouting"
	"github.com/flotilla-dev/flotilla/trafficrouting/providertest"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

func TestMain(m *testing.M) {
	os.Exit(cluster.RunPackage(m, cluster.Options{CRDDirs: []string{}, GatewayAPI: true}, &clusterConfig))
}

const (
	routeName = "web"
	stableSvc = "web"
	canarySvc = "web-canary"
)

// env is a client of the test cluster and the mapper the providers use.
type env struct {
	c      client.Client
	mapper meta.RESTMapper
}

func newEnv(t *testing.T) env {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gatewayv1.Install, gatewayv1beta1.Install} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	httpClient, err := rest.HTTPClientFor(clusterConfig)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(clusterConfig, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(clusterConfig, client.Options{Scheme: scheme, Mapper: mapper, HTTPClient: httpClient})
	if err != nil {
		t.Fatal(err)
	}
	return env{c: c, mapper: mapper}
}

// namespace creates a namespace of the test's own.
func (e env) namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gateway-"}}
	if err := e.c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), ns) }) // t.Context() is canceled by then
	return ns.Name
}

func (e env) provider(t *testing.T, ns, route string, mapper meta.RESTMapper) trafficrouting.Provider {
	t.Helper()
	cfg := trafficrouting.Config{
		Namespace: ns, StableService: stableSvc, CanaryService: canarySvc,
		Ref: rolloutsv1beta1.TrafficRoutingRef{Gateway: &rolloutsv1beta1.GatewayTrafficRouting{HTTPRouteName: &route}},
	}
	p, err := Factory(e.c, mapper)(cfg)
	if err != nil || p == nil {
		t.Fatalf("Factory: %v, %v", p, err)
	}
	return p
}

// fixture creates the stable Service and an HTTPRoute with two rules routing to it, one with an explicit
// weight and one without (the apiserver defaults it to 1), the second with a header modifier of its own.
func (e env) fixture(t *testing.T) types.NamespacedName {
	t.Helper()
	ns := e.namespace(t)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: stableSvc},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}, Selector: map[string]string{"app": "web"}},
	}
	if err := e.c.Create(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: routeName, Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"team": "a"}},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gateway"}}},
			Rules: []gatewayv1.HTTPRouteRule{
				{Matches: matches(prefix("/")), BackendRefs: []gatewayv1.HTTPBackendRef{serviceRef(stableSvc, weight(100))}},
				{
					Name:        ptr.To(gatewayv1.SectionName("api")),
					Matches:     matches(withHeaders(prefix("/api"), header("x-team", "a"))),
					Filters:     []gatewayv1.HTTPRouteFilter{headerModifier(gatewayv1.HTTPHeader{Name: "x-route", Value: "api"})},
					BackendRefs: []gatewayv1.HTTPBackendRef{serviceRef(stableSvc, nil)},
				},
			},
		},
	}
	if err := e.c.Create(t.Context(), route); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(route)
}

// serviceRef is a backendRef as users write it: kind explicit, group and weight left to the defaults.
func serviceRef(name string, w *int32) gatewayv1.HTTPBackendRef {
	return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{
		BackendObjectReference: gatewayv1.BackendObjectReference{
			Kind: ptr.To(gatewayv1.Kind("Service")), Name: gatewayv1.ObjectName(name), Port: ptr.To(gatewayv1.PortNumber(80)),
		},
		Weight: w,
	}}
}

func headerModifier(set gatewayv1.HTTPHeader) gatewayv1.HTTPRouteFilter {
	return gatewayv1.HTTPRouteFilter{
		Type:                  gatewayv1.HTTPRouteFilterRequestHeaderModifier,
		RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{set}},
	}
}

func (e env) route(t *testing.T, key types.NamespacedName) *gatewayv1.HTTPRoute {
	t.Helper()
	route := &gatewayv1.HTTPRoute{}
	if err := e.c.Get(t.Context(), key, route); err != nil {
		t.Fatal(err)
	}
	return route
}

func (e env) snapshot(t *testing.T, key types.NamespacedName) []byte {
	t.Helper()
	route := e.route(t, key)
	data, err := json.Marshal(map[string]any{"spec": route.Spec, "labels": route.Labels, "annotations": route.Annotations})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// conformanceCases adds to the default cases a path match, a query match and a header modifier.
func conformanceCases() []providertest.Case {
	r := trafficrouting.Routes{
		Matches: []rolloutsv1beta1.HttpRouteMatch{
			{Path: &gatewayv1.HTTPPathMatch{Value: ptr.To("/new")}},
			{QueryParams: []gatewayv1.HTTPQueryParamMatch{{Name: "beta", Value: "1"}}},
		},
		RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "x-version", Value: "canary"}}},
	}
	return append(providertest.DefaultCases(), providertest.Case{Name: "path-query-and-modifier", Routes: r})
}

func (e env) harness(mapper meta.RESTMapper) providertest.Harness {
	var key types.NamespacedName
	return providertest.Harness{
		Setup: func(t *testing.T) trafficrouting.Provider {
			key = e.fixture(t)
			return e.provider(t, key.Namespace, key.Name, mapper)
		},
		Snapshot: func(t *testing.T) []byte { return e.snapshot(t, key) },
		Verify:   func(t *testing.T, r trafficrouting.Routes) { verifyRoute(t, e.route(t, key), r) },
		Cases:    conformanceCases(),
	}
}

func TestConformance(t *testing.T) {
	e := newEnv(t)
	providertest.Run(t, e.harness(e.mapper))
}

// TestConformanceV1beta1 drives the provider through the v1beta1 API, as on clusters serving only that version.
func TestConformanceV1beta1(t *testing.T) {
	e := newEnv(t)
	gv := schema.GroupVersion{Group: gatewayv1.GroupName, Version: "v1beta1"}
	beta := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	beta.Add(gv.WithKind("HTTPRoute"), meta.RESTScopeNamespace)
	providertest.Run(t, e.harness(beta))
}

// verifyRoute checks the route against the fixture's: the stable rules keep their place, a weight splits them,
// matches add canary rules and leave the stable weights (100 and the default 1) alone.
func verifyRoute(t *testing.T, route *gatewayv1.HTTPRoute, r trafficrouting.Routes) {
	t.Helper()
	b := backends{namespace: route.Namespace, stable: stableSvc, canary: canarySvc}
	var stable, canary []gatewayv1.HTTPRouteRule
	for _, rule := range route.Spec.Rules {
		if b.isCanaryRule(rule) {
			canary = append(canary, rule)
		} else {
			stable = append(stable, rule)
		}
	}
	if len(stable) != 2 {
		t.Fatalf("got %d rules that are not canary rules, want the fixture's 2", len(stable))
	}
	switch {
	case len(r.Matches) > 0:
		verifyWeights(t, b, stable, [2]int32{100, 1}, nil)
		verifyCanaryRules(t, canary, r)
	case r.Routing():
		w := *r.Weight
		verifyWeights(t, b, stable, [2]int32{100 - w, 100 - w}, &w)
		if len(canary) != 0 {
			t.Errorf("got %d canary rules for a weight, want none", len(canary))
		}
	default:
		verifyWeights(t, b, stable, [2]int32{100, 1}, nil)
	}
}

// verifyWeights checks the weight of the stable backendRef of each rule, and the canary one's (none when nil).
func verifyWeights(t *testing.T, b backends, rules []gatewayv1.HTTPRouteRule, stable [2]int32, canary *int32) {
	t.Helper()
	for i, rule := range rules {
		if j := b.refIndex(rule, stableSvc); j < 0 || ptr.Deref(rule.BackendRefs[j].Weight, -1) != stable[i] {
			t.Errorf("rule %d: stable backendRef %d of %+v, want weight %d", i, j, rule.BackendRefs, stable[i])
		}
		j := b.refIndex(rule, canarySvc)
		switch {
		case canary == nil && j >= 0:
			t.Errorf("rule %d routes to the canary: %+v", i, rule.BackendRefs)
		case canary != nil && (j < 0 || ptr.Deref(rule.BackendRefs[j].Weight, -1) != *canary):
			t.Errorf("rule %d: canary backendRef %d of %+v, want weight %d", i, j, rule.BackendRefs, *canary)
		}
	}
}

// verifyCanaryRules: there are canary rules, each of their matches carries one of the release's, and they
// change headers as the release asks.
func verifyCanaryRules(t *testing.T, rules []gatewayv1.HTTPRouteRule, r trafficrouting.Routes) {
	t.Helper()
	if len(rules) == 0 {
		t.Fatal("no canary rule")
	}
	for i, rule := range rules {
		for _, m := range rule.Matches {
			if !slices.ContainsFunc(r.Matches, func(want rolloutsv1beta1.HttpRouteMatch) bool { return carries(m, want) }) {
				t.Errorf("canary rule %d: match %+v carries none of the release's", i, m)
			}
		}
		if r.RequestHeaderModifier != nil && !modifies(rule.Filters, r.RequestHeaderModifier.Set) {
			t.Errorf("canary rule %d: filters %+v do not set %+v", i, rule.Filters, r.RequestHeaderModifier.Set)
		}
	}
}

func carries(m gatewayv1.HTTPRouteMatch, want rolloutsv1beta1.HttpRouteMatch) bool {
	if want.Path != nil && (m.Path == nil || ptr.Deref(m.Path.Value, "") != ptr.Deref(want.Path.Value, "")) {
		return false
	}
	for _, h := range want.Headers {
		if !slices.ContainsFunc(m.Headers, func(g gatewayv1.HTTPHeaderMatch) bool { return g.Name == h.Name && g.Value == h.Value }) {
			return false
		}
	}
	for _, q := range want.QueryParams {
		if !slices.ContainsFunc(m.QueryParams, func(g gatewayv1.HTTPQueryParamMatch) bool { return g.Name == q.Name && g.Value == q.Value }) {
			return false
		}
	}
	return true
}

func modifies(filters []gatewayv1.HTTPRouteFilter, set []gatewayv1.HTTPHeader) bool {
	i := slices.IndexFunc(filters, func(f gatewayv1.HTTPRouteFilter) bool { return f.RequestHeaderModifier != nil })
	if i < 0 {
		return false
	}
	for _, h := range set {
		if !slices.Contains(filters[i].RequestHeaderModifier.Set, h) {
			return false
		}
	}
	return true
}

func TestInitializeMissingRoute(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace(t)
	p := e.provider(t, ns, "missing", e.mapper)
	err := p.Initialize(t.Context())
	if err == nil || !strings.Contains(err.Error(), ns+"/missing") {
		t.Errorf("Initialize: %v, want an error naming %s/missing", err, ns)
	}
	if _, err := p.EnsureRoutes(t.Context(), weightRoutes(10)); err == nil || !strings.Contains(err.Error(), ns+"/missing") {
		t.Errorf("EnsureRoutes: %v, want an error naming %s/missing", err, ns)
	}
	if done, err := p.Finalize(t.Context()); !done || err != nil {
		t.Errorf("Finalize: done=%v err=%v, want done: nothing to restore", done, err)
	}
}

// TestInitializeBackendRefNotService: the apiserver defaults a missing kind to Service, so the closest a user
// gets to a backendRef the provider does not route is one of another kind with the stable Service's name.
func TestInitializeBackendRefNotService(t *testing.T) {
	e := newEnv(t)
	key := e.fixture(t)
	route := e.route(t, key)
	for i := range route.Spec.Rules {
		ref := &route.Spec.Rules[i].BackendRefs[0]
		ref.Group = ptr.To(gatewayv1.Group("multicluster.x-k8s.io"))
		ref.Kind = ptr.To(gatewayv1.Kind("ServiceImport"))
	}
	if err := e.c.Update(t.Context(), route); err != nil {
		t.Fatal(err)
	}
	err := e.provider(t, key.Namespace, key.Name, e.mapper).Initialize(t.Context())
	if err == nil || !strings.Contains(err.Error(), "needs kind: Service") || !strings.Contains(err.Error(), key.String()) {
		t.Errorf("Initialize: %v, want an error naming %s and asking for kind: Service", err, key)
	}
}

// TestFinalizeKeepsEditsMadeDuringRelease: only what the release changed is undone.
func TestFinalizeKeepsEditsMadeDuringRelease(t *testing.T) {
	e := newEnv(t)
	key := e.fixture(t)
	p := e.provider(t, key.Namespace, key.Name, e.mapper)
	if done, err := p.EnsureRoutes(t.Context(), weightRoutes(30)); done || err != nil {
		t.Fatalf("EnsureRoutes: done=%v err=%v, want a write", done, err)
	}
	route := e.route(t, key)
	extra := gatewayv1.HTTPRouteRule{Matches: matches(prefix("/docs")), BackendRefs: []gatewayv1.HTTPBackendRef{serviceRef("docs", nil)}}
	route.Spec.Rules = append(route.Spec.Rules, extra)
	route.Labels["edited"] = "yes"
	if err := e.c.Update(t.Context(), route); err != nil {
		t.Fatal(err)
	}
	if done, err := p.Finalize(t.Context()); done || err != nil {
		t.Fatalf("Finalize: done=%v err=%v, want a write", done, err)
	}
	got := e.route(t, key)
	if len(got.Spec.Rules) != 3 || got.Spec.Rules[2].BackendRefs[0].Name != "docs" || got.Labels["edited"] != "yes" {
		t.Errorf("the edits made during the release are lost: labels %v, rules %+v", got.Labels, got.Spec.Rules)
	}
	if _, ok := got.Annotations[OriginalWeightsAnnotation]; ok {
		t.Errorf("annotation %s left after Finalize", OriginalWeightsAnnotation)
	}
	verifyWeights(t, p.(*Provider).backends, got.Spec.Rules[:2], [2]int32{100, 1}, nil)
}
