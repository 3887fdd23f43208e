package podwebhook

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

func TestConditionPatch(t *testing.T) {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{
		{Name: "mpod.kb.io", MatchConditions: []admissionregistrationv1.MatchCondition{{Name: ConditionName, Expression: LaunchPriorityOnly}}},
		{Name: WebhookName, MatchConditions: []admissionregistrationv1.MatchCondition{
			{Name: "other", Expression: "true"}, {Name: ConditionName, Expression: LaunchPriorityOnly}}},
	}}
	patch, ok := conditionPatch(cfg, "true")
	want := `[{"op":"test","path":"/webhooks/1/name","value":"msidecarset-pod.kb.io"},` +
		`{"op":"test","path":"/webhooks/1/matchConditions/1/name","value":"sidecarsets-or-launch-priority"},` +
		`{"op":"replace","path":"/webhooks/1/matchConditions/1/expression","value":"true"}]`
	if !ok || string(patch) != want {
		t.Errorf("patch %s (%v), want %s", patch, ok, want)
	}
	if _, ok := conditionPatch(cfg, LaunchPriorityOnly); ok {
		t.Error("a condition that holds the value already is patched")
	}
	cfg.Webhooks = cfg.Webhooks[:1]
	if _, ok := conditionPatch(cfg, "true"); ok {
		t.Error("a configuration without the webhook is patched")
	}
}
