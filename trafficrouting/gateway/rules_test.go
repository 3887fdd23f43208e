package gateway

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/trafficrouting"
)

var testBackends = backends{namespace: "ns", stable: "web", canary: "web-canary"}

func ref(name string, weight *int32) gatewayv1.HTTPBackendRef {
	return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{
		BackendObjectReference: gatewayv1.BackendObjectReference{
			Group: ptr.To(gatewayv1.Group("")),
			Kind:  ptr.To(gatewayv1.Kind("Service")),
			Name:  gatewayv1.ObjectName(name),
			Port:  ptr.To(gatewayv1.PortNumber(80)),
		},
		Weight: weight,
	}}
}

func rule(matches []gatewayv1.HTTPRouteMatch, refs ...gatewayv1.HTTPBackendRef) gatewayv1.HTTPRouteRule {
	return gatewayv1.HTTPRouteRule{Matches: matches, BackendRefs: refs}
}

func prefix(p string) gatewayv1.HTTPRouteMatch {
	return gatewayv1.HTTPRouteMatch{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To(p)}}
}

func header(name, value string) gatewayv1.HTTPHeaderMatch {
	return gatewayv1.HTTPHeaderMatch{Type: ptr.To(gatewayv1.HeaderMatchExact), Name: gatewayv1.HTTPHeaderName(name), Value: value}
}

func query(name, value string) gatewayv1.HTTPQueryParamMatch {
	return gatewayv1.HTTPQueryParamMatch{Type: ptr.To(gatewayv1.QueryParamMatchExact), Name: gatewayv1.HTTPHeaderName(name), Value: value}
}

// withHeaders returns m narrowed by headers.
func withHeaders(m gatewayv1.HTTPRouteMatch, hs ...gatewayv1.HTTPHeaderMatch) gatewayv1.HTTPRouteMatch {
	m = *m.DeepCopy()
	m.Headers = append(m.Headers, hs...)
	return m
}

func matches(ms ...gatewayv1.HTTPRouteMatch) []gatewayv1.HTTPRouteMatch { return ms }

func weight(w int32) *int32 { return &w }

func record(s string) *string { return &s }

func weightRoutes(w int32) trafficrouting.Routes { return trafficrouting.Routes{Weight: weight(w)} }

// canaryHeaderRoutes send the requests with header x-canary: yes to the canary.
func canaryHeaderRoutes() trafficrouting.Routes {
	return trafficrouting.Routes{Matches: []rolloutsv1beta1.HttpRouteMatch{{Headers: []gatewayv1.HTTPHeaderMatch{header("x-canary", "yes")}}}}
}

var cmpRules = cmpopts.EquateEmpty()

func TestPlanWeight(t *testing.T) {
	other := ref("other", weight(1))
	noKind := ref("web", weight(3))
	noKind.Kind = nil
	otherGroup := ref("web", weight(3))
	otherGroup.Group = ptr.To(gatewayv1.Group("multicluster.x-k8s.io"))
	otherNS := ref("web", weight(3))
	otherNS.Namespace = ptr.To(gatewayv1.Namespace("elsewhere"))
	root := matches(prefix("/"))
	cases := []struct {
		name   string
		rules  []gatewayv1.HTTPRouteRule
		routes trafficrouting.Routes
		want   routeState
	}{{
		name:   "weight splits the stable backendRef",
		rules:  []gatewayv1.HTTPRouteRule{rule(root, ref("web", weight(100)))},
		routes: weightRoutes(20),
		want: routeState{Rules: []gatewayv1.HTTPRouteRule{rule(root, ref("web", weight(80)), ref("web-canary", weight(20)))},
			Record: record("[100]")},
	}, {
		name:   "a weight never set is recorded as null",
		rules:  []gatewayv1.HTTPRouteRule{rule(root, ref("web", nil))},
		routes: weightRoutes(30),
		want: routeState{Rules: []gatewayv1.HTTPRouteRule{rule(root, ref("web", weight(70)), ref("web-canary", weight(30)))},
			Record: record("[null]")},
	}, {
		name: "several rules: only those routing to the stable Service change",
		rules: []gatewayv1.HTTPRouteRule{
			rule(root, ref("web", weight(100))),
			rule(matches(prefix("/other")), other),
			rule(matches(prefix("/api")), other, ref("web", weight(5))),
		},
		routes: weightRoutes(40),
		want: routeState{Rules: []gatewayv1.HTTPRouteRule{
			rule(root, ref("web", weight(60)), ref("web-canary", weight(40))),
			rule(matches(prefix("/other")), other),
			rule(matches(prefix("/api")), other, ref("web", weight(60)), ref("web-canary", weight(40))),
		}, Record: record("[100,5]")},
	}, {
		name:   "all traffic to the canary",
		rules:  []gatewayv1.HTTPRouteRule{rule(root, ref("web", weight(1)))},
		routes: weightRoutes(100),
		want: routeState{Rules: []gatewayv1.HTTPRouteRule{rule(root, ref("web", weight(0)), ref("web-canary", weight(100)))},
			Record: record("[1]")},
	}, {
		name:   "a weight above 100 is taken as 100",
		rules:  []gatewayv1.HTTPRouteRule{rule(root, ref("web", weight(1)))},
		routes: weightRoutes(150),
		want: routeState{Rules: []gatewayv1.HTTPRouteRule{rule(root, ref("web", weight(0)), ref("web-canary", weight(100)))},
			Record: record("[1]")},
	}, {
		name:   "weight 0 leaves the route as it is",
		rules:  []gatewayv1.HTTPRouteRule{rule(root, ref("web", weight(1)))},
		routes: weightRoutes(0),
		want:   routeState{Rules: []gatewayv1.HTTPRouteRule{rule(root, ref("web", weight(1)))}},
	}, {
		name:   "no weight and no matches leave the route as it is",
		rules:  []gatewayv1.HTTPRouteRule{rule(root, ref("web", weight(1)))},
		routes: trafficrouting.Routes{},
		want:   routeState{Rules: []gatewayv1.HTTPRouteRule{rule(root, ref("web", weight(1)))}},
	}, {
		name:   "backendRefs without kind Service, of another group or namespace are not the stable Service",
		rules:  []gatewayv1.HTTPRouteRule{rule(root, noKind), rule(root, otherGroup), rule(root, otherNS)},
		routes: weightRoutes(20),
		want:   routeState{Rules: []gatewayv1.HTTPRouteRule{rule(root, noKind), rule(root, otherGroup), rule(root, otherNS)}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := plan(routeState{Rules: c.rules}, testBackends, c.routes)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got, cmpRules); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanMatches(t *testing.T) {
	root, api := prefix("/"), prefix("/api")
	x, q := header("x-canary", "yes"), query("beta", "1")
	pathRoutes := trafficrouting.Routes{Matches: []rolloutsv1beta1.HttpRouteMatch{{
		Path: &gatewayv1.HTTPPathMatch{Value: ptr.To("/new")}, Headers: []gatewayv1.HTTPHeaderMatch{{Name: "x-canary", Value: "yes"}},
	}}}
	newPath := withHeaders(prefix("/new"), x)
	named := rule(matches(root), ref("web", weight(1)))
	named.Name = ptr.To(gatewayv1.SectionName("main"))
	cases := []struct {
		name   string
		rules  []gatewayv1.HTTPRouteRule
		routes trafficrouting.Routes
		want   []gatewayv1.HTTPRouteRule
	}{{
		name:   "a header match adds a canary rule narrowing the rule's match",
		rules:  []gatewayv1.HTTPRouteRule{rule(matches(root), ref("web", weight(1)))},
		routes: canaryHeaderRoutes(),
		want: []gatewayv1.HTTPRouteRule{
			rule(matches(root), ref("web", weight(1))),
			rule(matches(withHeaders(root, x)), ref("web-canary", weight(1))),
		},
	}, {
		name:   "matches take precedence over a weight",
		rules:  []gatewayv1.HTTPRouteRule{rule(matches(root), ref("web", weight(100)))},
		routes: trafficrouting.Routes{Weight: weight(50), Matches: canaryHeaderRoutes().Matches},
		want: []gatewayv1.HTTPRouteRule{
			rule(matches(root), ref("web", weight(100))),
			rule(matches(withHeaders(root, x)), ref("web-canary", weight(100))),
		},
	}, {
		name: "a path match stands alone and is added once",
		rules: []gatewayv1.HTTPRouteRule{
			rule(matches(root), ref("web", weight(1))),
			rule(matches(api), ref("web", weight(1))),
		},
		routes: pathRoutes,
		want: []gatewayv1.HTTPRouteRule{
			rule(matches(root), ref("web", weight(1))),
			rule(matches(api), ref("web", weight(1))),
			rule(matches(newPath), ref("web-canary", weight(1))),
		},
	}, {
		name: "path and header matches on several rules",
		rules: []gatewayv1.HTTPRouteRule{
			rule(matches(root), ref("web", weight(1))),
			rule(matches(api), ref("other", weight(1))),
			rule(matches(api), ref("web", weight(1))),
		},
		routes: trafficrouting.Routes{Matches: append(pathRoutes.Matches, canaryHeaderRoutes().Matches...)},
		want: []gatewayv1.HTTPRouteRule{
			rule(matches(root), ref("web", weight(1))),
			rule(matches(api), ref("other", weight(1))),
			rule(matches(api), ref("web", weight(1))),
			rule(matches(newPath, withHeaders(root, x)), ref("web-canary", weight(1))),
			rule(matches(withHeaders(api, x)), ref("web-canary", weight(1))),
		},
	}, {
		name:  "several rule matches times several release matches",
		rules: []gatewayv1.HTTPRouteRule{rule(matches(root, api), ref("web", weight(1)))},
		routes: trafficrouting.Routes{Matches: []rolloutsv1beta1.HttpRouteMatch{
			{Headers: []gatewayv1.HTTPHeaderMatch{x}},
			{QueryParams: []gatewayv1.HTTPQueryParamMatch{{Name: "beta", Value: "1"}}},
		}},
		want: []gatewayv1.HTTPRouteRule{
			rule(matches(root, api), ref("web", weight(1))),
			rule(matches(withHeaders(root, x), withQuery(root, q), withHeaders(api, x), withQuery(api, q)), ref("web-canary", weight(1))),
		},
	}, {
		name:   "a rule without matches matches every path",
		rules:  []gatewayv1.HTTPRouteRule{rule(nil, ref("web", weight(1)))},
		routes: canaryHeaderRoutes(),
		want: []gatewayv1.HTTPRouteRule{
			rule(nil, ref("web", weight(1))),
			rule(matches(withHeaders(root, x)), ref("web-canary", weight(1))),
		},
	}, {
		name:   "a header the rule matches already takes the release's value",
		rules:  []gatewayv1.HTTPRouteRule{rule(matches(withHeaders(root, header("X-Canary", "no"), header("x-env", "prod"))), ref("web", weight(1)))},
		routes: canaryHeaderRoutes(),
		want: []gatewayv1.HTTPRouteRule{
			rule(matches(withHeaders(root, header("X-Canary", "no"), header("x-env", "prod"))), ref("web", weight(1))),
			rule(matches(withHeaders(root, x, header("x-env", "prod"))), ref("web-canary", weight(1))),
		},
	}, {
		name:   "the canary rule has no name and only the canary backendRef",
		rules:  []gatewayv1.HTTPRouteRule{{Name: named.Name, Matches: named.Matches, BackendRefs: []gatewayv1.HTTPBackendRef{ref("other", weight(1)), ref("web", weight(1))}}},
		routes: canaryHeaderRoutes(),
		want: []gatewayv1.HTTPRouteRule{
			{Name: named.Name, Matches: named.Matches, BackendRefs: []gatewayv1.HTTPBackendRef{ref("other", weight(1)), ref("web", weight(1))}},
			rule(matches(withHeaders(root, x)), ref("web-canary", weight(1))),
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := plan(routeState{Rules: c.rules}, testBackends, c.routes)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got.Rules, cmpRules); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if got.Record == nil {
				t.Error("no record of the original weights")
			}
		})
	}
}

func withQuery(m gatewayv1.HTTPRouteMatch, qs ...gatewayv1.HTTPQueryParamMatch) gatewayv1.HTTPRouteMatch {
	m = *m.DeepCopy()
	m.QueryParams = append(m.QueryParams, qs...)
	return m
}

func TestPlanHeaderModifier(t *testing.T) {
	set := gatewayv1.HTTPHeader{Name: "x-version", Value: "canary"}
	routes := canaryHeaderRoutes()
	routes.RequestHeaderModifier = &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{set}, Remove: []string{"x-debug"}}
	ruleFilter := gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{
		Set: []gatewayv1.HTTPHeader{{Name: "X-Version", Value: "stable"}, {Name: "x-team", Value: "a"}}, Remove: []string{"X-Debug"},
	}}
	cases := []struct {
		name    string
		filters []gatewayv1.HTTPRouteFilter
		want    []gatewayv1.HTTPRouteFilter
	}{{
		name: "added as a filter",
		want: []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: routes.RequestHeaderModifier}},
	}, {
		name:    "merged into the rule's own modifier",
		filters: []gatewayv1.HTTPRouteFilter{ruleFilter},
		want: []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{
			Set: []gatewayv1.HTTPHeader{set, {Name: "x-team", Value: "a"}}, Remove: []string{"x-debug"},
		}}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			original := rule(matches(prefix("/")), ref("web", weight(1)))
			original.Filters = c.filters
			got, err := plan(routeState{Rules: []gatewayv1.HTTPRouteRule{original}}, testBackends, routes)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Rules) != 2 {
				t.Fatalf("got %d rules, want the original and a canary rule", len(got.Rules))
			}
			if diff := cmp.Diff(c.filters, got.Rules[0].Filters, cmpRules); diff != "" {
				t.Errorf("the original rule's filters changed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.want, got.Rules[1].Filters, cmpRules); diff != "" {
				t.Errorf("canary rule filters (-want +got):\n%s", diff)
			}
		})
	}
}

// originalRules is a route as users write it: one rule with a weight, one without, one to another Service.
func originalRules() []gatewayv1.HTTPRouteRule {
	return []gatewayv1.HTTPRouteRule{
		rule(matches(prefix("/")), ref("web", weight(100))),
		rule(matches(withHeaders(prefix("/api"), header("x-team", "a"))), ref("web", nil)),
		rule(matches(prefix("/other")), ref("other", weight(1))),
	}
}

func allRoutes() map[string]trafficrouting.Routes {
	return map[string]trafficrouting.Routes{
		"weight":            weightRoutes(20),
		"all":               weightRoutes(100),
		"header":            canaryHeaderRoutes(),
		"header-and-weight": {Weight: weight(50), Matches: canaryHeaderRoutes().Matches},
		"path": {Matches: []rolloutsv1beta1.HttpRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Value: ptr.To("/new")}}},
			RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Add: []gatewayv1.HTTPHeader{{Name: "x-canary", Value: "1"}}}},
	}
}

// TestPlanSteps: whatever the earlier step set, a step gives what it gives on the original route, a repeat
// changes nothing, and finalizing gives the original route back exactly.
func TestPlanSteps(t *testing.T) {
	original := routeState{Rules: originalRules()}
	for firstName, first := range allRoutes() {
		for secondName, second := range allRoutes() {
			t.Run(firstName+"-then-"+secondName, func(t *testing.T) {
				step1 := mustPlan(t, original, first)
				step2 := mustPlan(t, step1, second)
				if diff := cmp.Diff(mustPlan(t, original, second), step2, cmpRules); diff != "" {
					t.Errorf("second step differs from the same step on the original route (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(step2, mustPlan(t, step2, second), cmpRules); diff != "" {
					t.Errorf("repeating the step changes the route (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(original, mustPlan(t, step2, trafficrouting.Stable()), cmpRules); diff != "" {
					t.Errorf("finalizing does not restore the route (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func mustPlan(t *testing.T, s routeState, r trafficrouting.Routes) routeState {
	t.Helper()
	got, err := plan(s, testBackends, r)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestPlanFinalize(t *testing.T) {
	canaryRule := rule(matches(withHeaders(prefix("/"), header("x-canary", "yes"))), ref("web-canary", weight(1)))
	cases := []struct {
		name string
		cur  routeState
		want routeState
	}{{
		name: "untouched route",
		cur:  routeState{Rules: originalRules()},
		want: routeState{Rules: originalRules()},
	}, {
		name: "recorded weights come back, null as no weight",
		cur: routeState{Rules: []gatewayv1.HTTPRouteRule{
			rule(matches(prefix("/")), ref("web", weight(90)), ref("web-canary", weight(10))),
			rule(matches(prefix("/api")), ref("web", weight(90)), ref("web-canary", weight(10))),
		}, Record: record("[100,null]")},
		want: routeState{Rules: []gatewayv1.HTTPRouteRule{
			rule(matches(prefix("/")), ref("web", weight(100))),
			rule(matches(prefix("/api")), ref("web", nil)),
		}},
	}, {
		name: "without a record canary rules and backendRefs go and weights stay",
		cur: routeState{Rules: []gatewayv1.HTTPRouteRule{
			rule(matches(prefix("/")), ref("web", weight(90)), ref("web-canary", weight(10))), canaryRule,
		}},
		want: routeState{Rules: []gatewayv1.HTTPRouteRule{rule(matches(prefix("/")), ref("web", weight(90)))}},
	}, {
		name: "a record shorter than the rules restores what it holds",
		cur: routeState{Rules: []gatewayv1.HTTPRouteRule{
			rule(matches(prefix("/")), ref("web", weight(90)), ref("web-canary", weight(10))),
			rule(matches(prefix("/new")), ref("web", weight(3))),
		}, Record: record("[100]")},
		want: routeState{Rules: []gatewayv1.HTTPRouteRule{
			rule(matches(prefix("/")), ref("web", weight(100))),
			rule(matches(prefix("/new")), ref("web", weight(3))),
		}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, mustPlan(t, c.cur, trafficrouting.Stable()), cmpRules); diff != "" {
				t.Errorf("finalize (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanBadRecord(t *testing.T) {
	_, err := plan(routeState{Rules: originalRules(), Record: record("{")}, testBackends, trafficrouting.Stable())
	if err == nil {
		t.Fatal("a malformed record was accepted")
	}
}
