// Package matchconditions keeps matchCondition expressions of a MutatingWebhookConfiguration in step with
// whether objects of some kinds exist: a module whose webhook is worth calling only while some object of
// its kind may apply narrows the webhook's conditions when none exists, so other requests pay no round trip.
// Patch is the pure part; Switch is the controller a module sets up with the kinds it watches and its own
// choice of expressions. PodRoutes is the one Switch of the pod webhooks' routing, which several modules
// share: each adds the pods it needs on the pod chain while objects of its kind exist.
package matchconditions

import (
	"encoding/json"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// Key names one matchCondition of one webhook.
type Key struct {
	Webhook   string
	Condition string
}

// Same compares expressions as the API server evaluates them: a chart may fold them over lines.
func Same(a, b string) bool {
	return strings.Join(strings.Fields(a), "") == strings.Join(strings.Fields(b), "")
}

// Patch is the JSON patch that sets each condition of want to its expression, testing that the webhook and
// the condition are still at the indexes they were read at; ok is false when nothing is to change. A
// webhook or condition the configuration does not have (a module not installed, an older chart) is left out.
func Patch(cfg *admissionregistrationv1.MutatingWebhookConfiguration, want map[Key]string) ([]byte, bool) {
	var ops []map[string]string
	for i, w := range cfg.Webhooks {
		for j, c := range w.MatchConditions {
			expr, ok := want[Key{Webhook: w.Name, Condition: c.Name}]
			if ok && !Same(c.Expression, expr) {
				ops = append(ops, replace(i, j, w.Name, c.Name, expr)...)
			}
		}
	}
	if len(ops) == 0 {
		return nil, false
	}
	patch, _ := json.Marshal(ops) // strings always marshal
	return patch, true
}

// replace sets the expression of condition j of webhook i, guarded by tests of both names.
func replace(i, j int, webhook, condition, expr string) []map[string]string {
	base := fmt.Sprintf("/webhooks/%d", i)
	cond := fmt.Sprintf("%s/matchConditions/%d", base, j)
	return []map[string]string{
		{"op": "test", "path": base + "/name", "value": webhook},
		{"op": "test", "path": cond + "/name", "value": condition},
		{"op": "replace", "path": cond + "/expression", "value": expr},
	}
}
