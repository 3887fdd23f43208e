package gateway

import (
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/flotilla-dev/flotilla/trafficrouting"
)

// OriginalWeightsAnnotation on an HTTPRoute holds, while a release has changed it, the JSON list of the original
// weights of its backendRefs to the stable Service: one per rule routing to it, in rule order, null where none
// was set.
//
// Only the weights are recorded because they are the only thing a release overwrites: everything else it adds
// is recognisable (backendRefs to the canary Service, rules routing to the canary Service alone) and simply
// removed. So the rest of the route, including edits made during the release, stays as it is, and finalizing
// gives the route back exactly, where upstream sets every stable weight to 1.
const OriginalWeightsAnnotation = "rollouts.flotilla.dev/gateway-original-weights"

// serviceKind is the only backendRef kind a release routes.
const serviceKind = "Service"

// backends names the Services a release routes between, in the HTTPRoute's namespace.
type backends struct {
	namespace string
	stable    string
	canary    string
}

// routeState is the part of an HTTPRoute a release changes.
type routeState struct {
	Rules []gatewayv1.HTTPRouteRule
	// Record is the OriginalWeightsAnnotation value, nil when there is none.
	Record *string
}

// equal compares semantically: nil and empty lists are the same to the apiserver.
func (s routeState) equal(o routeState) bool {
	return ptr.Equal(s.Record, o.Record) && equality.Semantic.DeepEqual(s.Rules, o.Rules)
}

// plan computes the state that routes as r asks, from the current state of any earlier step: what earlier
// steps added is taken out first, so every step starts from the original rules. Routes that send nothing to the
// canary give back the original rules without a record, which is also what finalizing does.
func plan(cur routeState, b backends, r trafficrouting.Routes) (routeState, error) {
	original, err := decodeRecord(cur.Record)
	if err != nil {
		return routeState{}, err
	}
	base := b.base(cur.Rules, original)
	if !r.Routing() {
		return routeState{Rules: base}, nil
	}
	record, err := encodeRecord(b.stableWeights(base))
	if err != nil {
		return routeState{}, err
	}
	desired := b.route(cloneRules(base), r)
	if equality.Semantic.DeepEqual(desired, base) {
		return routeState{Rules: base}, nil
	}
	return routeState{Rules: desired, Record: &record}, nil
}

// route changes the original rules as r asks. Matches take precedence over a weight, as upstream's Gateway API
// provider does (and the Rollout API documents): with matches the stable backendRefs keep their weights and
// only the matching requests reach the canary.
func (b backends) route(rules []gatewayv1.HTTPRouteRule, r trafficrouting.Routes) []gatewayv1.HTTPRouteRule {
	if len(r.Matches) > 0 {
		return append(rules, b.canaryRules(rules, r)...)
	}
	return b.withWeight(rules, ptr.Deref(r.Weight, 0))
}

// withWeight gives every rule routing to the stable Service a canary backendRef (a copy of the stable one
// renamed) with weight w, and the stable backendRef 100-w.
func (b backends) withWeight(rules []gatewayv1.HTTPRouteRule, w int32) []gatewayv1.HTTPRouteRule {
	w = min(max(w, 0), 100)
	for i := range rules {
		j := b.refIndex(rules[i], b.stable)
		if j < 0 {
			continue
		}
		canary := *rules[i].BackendRefs[j].DeepCopy()
		canary.Name = gatewayv1.ObjectName(b.canary)
		canary.Weight = ptr.To(w)
		rules[i].BackendRefs[j].Weight = ptr.To(100 - w)
		rules[i].BackendRefs = append(rules[i].BackendRefs, canary)
	}
	return rules
}

// base takes out what a release added (rules routing to the canary alone, canary backendRefs) and gives the
// stable backendRefs their original weights back.
func (b backends) base(rules []gatewayv1.HTTPRouteRule, original []*int32) []gatewayv1.HTTPRouteRule {
	var out []gatewayv1.HTTPRouteRule
	for _, rule := range rules {
		if b.isCanaryRule(rule) {
			continue
		}
		rule = *rule.DeepCopy()
		rule.BackendRefs = slices.DeleteFunc(rule.BackendRefs, func(ref gatewayv1.HTTPBackendRef) bool {
			return b.refersTo(ref, b.canary)
		})
		out = append(out, rule)
	}
	b.restoreWeights(out, original)
	return out
}

// restoreWeights sets the recorded weights on the stable backendRefs, rule by rule; a record shorter than the
// rules (the route was edited during the release) leaves the other weights as they are.
func (b backends) restoreWeights(rules []gatewayv1.HTTPRouteRule, original []*int32) {
	n := 0
	for i := range rules {
		j := b.refIndex(rules[i], b.stable)
		if j < 0 {
			continue
		}
		if n < len(original) {
			rules[i].BackendRefs[j].Weight = copyWeight(original[n])
		}
		n++
	}
}

// stableWeights lists the weights of the stable backendRefs, rule by rule.
func (b backends) stableWeights(rules []gatewayv1.HTTPRouteRule) []*int32 {
	var weights []*int32
	for _, rule := range rules {
		if j := b.refIndex(rule, b.stable); j >= 0 {
			weights = append(weights, copyWeight(rule.BackendRefs[j].Weight))
		}
	}
	return weights
}

// isCanaryRule recognises the rules a release appends: every backendRef is the canary Service.
func (b backends) isCanaryRule(rule gatewayv1.HTTPRouteRule) bool {
	return len(rule.BackendRefs) > 0 && !slices.ContainsFunc(rule.BackendRefs, func(ref gatewayv1.HTTPBackendRef) bool {
		return !b.refersTo(ref, b.canary)
	})
}

// refIndex is the index of the rule's first backendRef to the Service name, or -1.
func (b backends) refIndex(rule gatewayv1.HTTPRouteRule, name string) int {
	return slices.IndexFunc(rule.BackendRefs, func(ref gatewayv1.HTTPBackendRef) bool { return b.refersTo(ref, name) })
}

// refersTo reports whether ref is the core Service name in the route's namespace. The kind must be set
// explicitly, as upstream requires: a backendRef without it is left alone.
func (b backends) refersTo(ref gatewayv1.HTTPBackendRef, name string) bool {
	o := ref.BackendObjectReference
	if o.Kind == nil || *o.Kind != serviceKind || string(o.Name) != name {
		return false
	}
	if o.Group != nil && *o.Group != "" {
		return false
	}
	return o.Namespace == nil || string(*o.Namespace) == b.namespace
}

func decodeRecord(record *string) ([]*int32, error) {
	if record == nil {
		return nil, nil
	}
	var weights []*int32
	if err := json.Unmarshal([]byte(*record), &weights); err != nil {
		return nil, fmt.Errorf("annotation %s is not a list of weights (remove it to keep the current ones): %w",
			OriginalWeightsAnnotation, err)
	}
	return weights, nil
}

func encodeRecord(weights []*int32) (string, error) {
	if weights == nil {
		weights = []*int32{}
	}
	data, err := json.Marshal(weights)
	if err != nil {
		return "", fmt.Errorf("encoding the original weights: %w", err)
	}
	return string(data), nil
}

func copyWeight(w *int32) *int32 {
	if w == nil {
		return nil
	}
	return ptr.To(*w)
}

func cloneRules(rules []gatewayv1.HTTPRouteRule) []gatewayv1.HTTPRouteRule {
	var out []gatewayv1.HTTPRouteRule
	for i := range rules {
		out = append(out, *rules[i].DeepCopy())
	}
	return out
}
