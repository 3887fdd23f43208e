package matchconditions

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

type conds = []admissionregistrationv1.MatchCondition

func configuration(webhooks ...admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: webhooks}
}

func webhook(name string, c conds) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{Name: name, MatchConditions: c}
}

func ops(webhook, i, j, condition, expr string) []map[string]string {
	base := "/webhooks/" + i
	cond := base + "/matchConditions/" + j
	return []map[string]string{
		{"op": "test", "path": base + "/name", "value": webhook},
		{"op": "test", "path": cond + "/name", "value": condition},
		{"op": "replace", "path": cond + "/expression", "value": expr},
	}
}

func TestPatch(t *testing.T) {
	a, b := Key{Webhook: "a.kb.io", Condition: "ca"}, Key{Webhook: "b.kb.io", Condition: "cb"}
	for _, tc := range []struct {
		name string
		cfg  *admissionregistrationv1.MutatingWebhookConfiguration
		want map[Key]string
		ops  []map[string]string // nil: nothing to change
	}{{
		name: "one condition behind others, by index",
		cfg: configuration(webhook("other.kb.io", conds{{Name: "ca", Expression: "x"}}),
			webhook("a.kb.io", conds{{Name: "other", Expression: "x"}, {Name: "ca", Expression: "x"}})),
		want: map[Key]string{a: "true"},
		ops:  ops("a.kb.io", "1", "1", "ca", "true"),
	}, {
		name: "two webhooks in one patch, in the configuration's order",
		cfg: configuration(webhook("mdeployment.kb.io", nil), webhook("b.kb.io", conds{{Name: "cb", Expression: "x"}}),
			webhook("a.kb.io", conds{{Name: "ca", Expression: "x"}})),
		want: map[Key]string{a: "y", b: "!y"},
		ops:  append(ops("b.kb.io", "1", "0", "cb", "!y"), ops("a.kb.io", "2", "0", "ca", "y")...),
	}, {
		name: "only the condition that differs",
		cfg:  configuration(webhook("a.kb.io", conds{{Name: "ca", Expression: "y"}}), webhook("b.kb.io", conds{{Name: "cb", Expression: "x"}})),
		want: map[Key]string{a: "y", b: "!y"},
		ops:  ops("b.kb.io", "1", "0", "cb", "!y"),
	}, {
		name: "every condition holds its value already",
		cfg:  configuration(webhook("a.kb.io", conds{{Name: "ca", Expression: "y"}}), webhook("b.kb.io", conds{{Name: "cb", Expression: "!y"}})),
		want: map[Key]string{a: "y", b: "!y"},
	}, {
		name: "a value folded over lines is the same value",
		cfg:  configuration(webhook("a.kb.io", conds{{Name: "ca", Expression: "x &&\n  y"}})),
		want: map[Key]string{a: "x && y"},
	}, {
		name: "a webhook the configuration lacks is left out",
		cfg:  configuration(webhook("a.kb.io", conds{{Name: "ca", Expression: "x"}})),
		want: map[Key]string{a: "y", b: "!y"},
		ops:  ops("a.kb.io", "0", "0", "ca", "y"),
	}, {
		name: "a condition the webhook lacks is left out",
		cfg:  configuration(webhook("a.kb.io", conds{{Name: "other", Expression: "x"}})),
		want: map[Key]string{a: "y"},
	}, {
		name: "no webhooks",
		cfg:  configuration(),
		want: map[Key]string{a: "y"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			patch, ok := Patch(tc.cfg, tc.want)
			if ok != (tc.ops != nil) {
				t.Fatalf("patch %s (%v), want one: %v", patch, ok, tc.ops != nil)
			}
			if !ok {
				return
			}
			var got []map[string]string
			if err := json.Unmarshal(patch, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.ops, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}
