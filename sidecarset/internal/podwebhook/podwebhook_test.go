package podwebhook

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/flotilla-dev/flotilla/webhooks/matchconditions"
)

// The condition opens to every pod while a SidecarSet exists, and narrows back to launch priority without.
func TestConditions(t *testing.T) {
	narrow := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{
		{Name: WebhookName, MatchConditions: []admissionregistrationv1.MatchCondition{{Name: ConditionName, Expression: LaunchPriorityOnly}}},
	}}
	patch, ok := matchconditions.Patch(narrow, Conditions(true))
	want := `[{"op":"test","path":"/webhooks/0/name","value":"msidecarset-pod.kb.io"},` +
		`{"op":"test","path":"/webhooks/0/matchConditions/0/name","value":"sidecarsets-or-launch-priority"},` +
		`{"op":"replace","path":"/webhooks/0/matchConditions/0/expression","value":"true"}]`
	if !ok || string(patch) != want {
		t.Errorf("patch %s (%v), want %s", patch, ok, want)
	}
	if _, ok := matchconditions.Patch(narrow, Conditions(false)); ok {
		t.Error("the chart's condition is patched without SidecarSets")
	}
}
