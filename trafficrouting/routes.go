// Package trafficrouting holds what the Rollout engine asks of the network during a release: the Routes value a
// step computes, the Provider contract every network implementation meets, and the explicit registry that builds
// the providers one Rollout configures.
package trafficrouting

import (
	"fmt"
	"strconv"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Routes is the traffic one step sends to the new revision.
type Routes struct {
	// Weight is the percentage (0..100) of traffic routed to the canary; nil when the step sets none.
	Weight *int32
	// Matches send the requests matching any one of them to the canary. They take precedence over Weight
	// where a provider cannot express both.
	Matches []rolloutsv1beta1.HttpRouteMatch
	// RequestHeaderModifier rewrites the headers of requests routed to the canary, where a provider supports it.
	RequestHeaderModifier *gatewayv1.HTTPHeaderFilter
}

// Stable is the Routes that send all traffic to the stable revision.
func Stable() Routes {
	zero := int32(0)
	return Routes{Weight: &zero}
}

// Routing reports whether the routes send any traffic to the canary.
func (r Routes) Routing() bool {
	return len(r.Matches) > 0 || (r.Weight != nil && *r.Weight > 0)
}

// WeightOrNone is the weight, or -1 when none is set (the value upstream's scripts expect).
func (r Routes) WeightOrNone() int32 {
	if r.Weight == nil {
		return -1
	}
	return *r.Weight
}

// FromStrategy computes the Routes of a step's traffic settings; a malformed traffic value is an error that
// names it.
func FromStrategy(s rolloutsv1beta1.TrafficRoutingStrategy) (Routes, error) {
	r := Routes{Matches: s.Matches, RequestHeaderModifier: s.RequestHeaderModifier}
	if s.Traffic == nil {
		return r, nil
	}
	w, err := ParseWeight(*s.Traffic)
	if err != nil {
		return Routes{}, err
	}
	r.Weight = &w
	return r, nil
}

// ParseWeight reads a traffic percentage such as "5%" (the "%" may be left out).
func ParseWeight(s string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(s), "%"), 10, 32)
	if err != nil || n < 0 || n > 100 {
		return 0, fmt.Errorf("traffic %q is not a percentage between 0%% and 100%%", s)
	}
	return int32(n), nil
}

// String describes the routes for events and logs.
func (r Routes) String() string {
	var parts []string
	if r.Weight != nil {
		parts = append(parts, fmt.Sprintf("weight %d%%", *r.Weight))
	}
	for _, m := range r.Matches {
		parts = append(parts, describeMatch(m))
	}
	if len(parts) == 0 {
		return "no routes"
	}
	return strings.Join(parts, ", ")
}

func describeMatch(m rolloutsv1beta1.HttpRouteMatch) string {
	var conds []string
	if m.Path != nil && m.Path.Value != nil {
		conds = append(conds, "path "+*m.Path.Value)
	}
	for _, h := range m.Headers {
		conds = append(conds, fmt.Sprintf("header %s=%s", h.Name, h.Value))
	}
	for _, q := range m.QueryParams {
		conds = append(conds, fmt.Sprintf("query %s=%s", q.Name, q.Value))
	}
	return "match " + strings.Join(conds, " and ")
}
