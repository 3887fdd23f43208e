package gateway

import (
	"slices"
	"strings"

	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/trafficrouting"
)

// canaryRules builds, for each rule routing to the stable Service, a rule sending the requests the release
// matches to the canary Service alone. A release match with a path stands on its own and is added once (to the
// first such rule); any other release match narrows each of the rule's own matches (their conditions are ANDed).
func (b backends) canaryRules(rules []gatewayv1.HTTPRouteRule, r trafficrouting.Routes) []gatewayv1.HTTPRouteRule {
	paths, others := splitMatches(r.Matches)
	var out []gatewayv1.HTTPRouteRule
	for _, rule := range rules {
		j := b.refIndex(rule, b.stable)
		if j < 0 {
			continue
		}
		matches := slices.Concat(paths, narrow(rule.Matches, others))
		paths = nil
		if len(matches) == 0 {
			continue
		}
		out = append(out, b.canaryRule(rule, j, matches, r.RequestHeaderModifier))
	}
	return out
}

// canaryRule copies rule with only a canary copy of its stable backendRef. The copy loses the rule name, which
// must be unique within a route; the release's header modifier, if any, joins its filters (the rule goes away
// with the release, so the route is still restored exactly).
func (b backends) canaryRule(rule gatewayv1.HTTPRouteRule, stable int, matches []gatewayv1.HTTPRouteMatch,
	modifier *gatewayv1.HTTPHeaderFilter) gatewayv1.HTTPRouteRule {
	c := *rule.DeepCopy()
	ref := c.BackendRefs[stable]
	ref.Name = gatewayv1.ObjectName(b.canary)
	c.Name = nil
	c.BackendRefs = []gatewayv1.HTTPBackendRef{ref}
	c.Matches = matches
	c.Filters = withHeaderModifier(c.Filters, modifier)
	return c
}

// splitMatches converts the release's matches, apart those with a path from the others.
func splitMatches(ms []rolloutsv1beta1.HttpRouteMatch) (paths, others []gatewayv1.HTTPRouteMatch) {
	for _, m := range ms {
		if m.Path != nil {
			paths = append(paths, routeMatch(m))
		} else {
			others = append(others, routeMatch(m))
		}
	}
	return paths, others
}

// narrow adds the conditions of each of others to each of the rule's matches. A rule without matches matches
// every path, as the apiserver's default says.
func narrow(ruleMatches, others []gatewayv1.HTTPRouteMatch) []gatewayv1.HTTPRouteMatch {
	if len(ruleMatches) == 0 {
		ruleMatches = []gatewayv1.HTTPRouteMatch{{Path: defaultPath()}}
	}
	var out []gatewayv1.HTTPRouteMatch
	for _, m := range ruleMatches {
		for _, o := range others {
			c := *m.DeepCopy()
			c.Headers = mergeByKey(c.Headers, o.Headers, headerKey)
			c.QueryParams = mergeByKey(c.QueryParams, o.QueryParams, queryKey)
			out = append(out, c)
		}
	}
	return out
}

// routeMatch converts a release match with the defaults the apiserver would fill in, so a written rule reads
// back equal to the computed one.
func routeMatch(m rolloutsv1beta1.HttpRouteMatch) gatewayv1.HTTPRouteMatch {
	out := gatewayv1.HTTPRouteMatch{}
	if m.Path != nil {
		out.Path = &gatewayv1.HTTPPathMatch{
			Type:  ptr.To(ptr.Deref(m.Path.Type, gatewayv1.PathMatchPathPrefix)),
			Value: ptr.To(ptr.Deref(m.Path.Value, "/")),
		}
	}
	for _, h := range m.Headers {
		h.Type = ptr.To(ptr.Deref(h.Type, gatewayv1.HeaderMatchExact))
		out.Headers = append(out.Headers, h)
	}
	for _, q := range m.QueryParams {
		q.Type = ptr.To(ptr.Deref(q.Type, gatewayv1.QueryParamMatchExact))
		out.QueryParams = append(out.QueryParams, q)
	}
	return out
}

func defaultPath() *gatewayv1.HTTPPathMatch {
	return &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To("/")}
}

// withHeaderModifier adds modifier to the filters, merged into their RequestHeaderModifier filter when there is
// one (a rule may hold only one).
func withHeaderModifier(filters []gatewayv1.HTTPRouteFilter, modifier *gatewayv1.HTTPHeaderFilter) []gatewayv1.HTTPRouteFilter {
	if modifier == nil || len(modifier.Set)+len(modifier.Add)+len(modifier.Remove) == 0 {
		return filters
	}
	i := slices.IndexFunc(filters, func(f gatewayv1.HTTPRouteFilter) bool {
		return f.Type == gatewayv1.HTTPRouteFilterRequestHeaderModifier
	})
	if i < 0 {
		return append(filters, gatewayv1.HTTPRouteFilter{
			Type:                  gatewayv1.HTTPRouteFilterRequestHeaderModifier,
			RequestHeaderModifier: modifier.DeepCopy(),
		})
	}
	filters[i].RequestHeaderModifier = mergeModifiers(filters[i].RequestHeaderModifier, modifier)
	return filters
}

// mergeModifiers joins the release's header changes to the rule's; on a header both name, the release's wins.
func mergeModifiers(rule, release *gatewayv1.HTTPHeaderFilter) *gatewayv1.HTTPHeaderFilter {
	out := &gatewayv1.HTTPHeaderFilter{}
	if rule != nil {
		out = rule.DeepCopy()
	}
	out.Set = mergeByKey(out.Set, release.Set, headerValueKey)
	out.Add = mergeByKey(out.Add, release.Add, headerValueKey)
	out.Remove = mergeByKey(out.Remove, release.Remove, strings.ToLower)
	return out
}

// mergeByKey appends extra to base, an entry replacing the one of base with the same key: the apiserver
// rejects two entries with one name, and on a name both set the release's condition is the one that counts.
func mergeByKey[T any](base, extra []T, key func(T) string) []T {
	out := slices.Clone(base)
	for _, e := range extra {
		i := slices.IndexFunc(out, func(o T) bool { return key(o) == key(e) })
		if i < 0 {
			out = append(out, e)
		} else {
			out[i] = e
		}
	}
	return out
}

// Header names are case-insensitive; query parameter names are not.
func headerKey(h gatewayv1.HTTPHeaderMatch) string    { return strings.ToLower(string(h.Name)) }
func headerValueKey(h gatewayv1.HTTPHeader) string    { return strings.ToLower(string(h.Name)) }
func queryKey(q gatewayv1.HTTPQueryParamMatch) string { return string(q.Name) }
