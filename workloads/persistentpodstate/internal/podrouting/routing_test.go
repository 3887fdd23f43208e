package podrouting

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/flotilla-dev/flotilla/webhooks/matchconditions"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
)

// While a PersistentPodState exists both conditions take StatefulSet pods, in one patch; without, the
// chart's conditions stand.
func TestConditions(t *testing.T) {
	offPod, offSidecar := Expressions(false)
	onPod, onSidecar := Expressions(true)
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{
		{Name: "mdeployment.kb.io"},
		{Name: PodWebhook, MatchConditions: []admissionregistrationv1.MatchCondition{{Name: PodCondition, Expression: offPod}}},
		{Name: SidecarWebhook, MatchConditions: []admissionregistrationv1.MatchCondition{
			{Name: SidecarCondition, Expression: offSidecar}, {Name: "sidecarsets-or-launch-priority", Expression: "true"}}},
	}}
	patch, ok := matchconditions.Patch(cfg, Conditions(true))
	var ops []map[string]string
	if !ok || json.Unmarshal(patch, &ops) != nil {
		t.Fatalf("patch %s (%v)", patch, ok)
	}
	want := []map[string]string{
		{"op": "test", "path": "/webhooks/1/name", "value": PodWebhook},
		{"op": "test", "path": "/webhooks/1/matchConditions/0/name", "value": PodCondition},
		{"op": "replace", "path": "/webhooks/1/matchConditions/0/expression", "value": onPod},
		{"op": "test", "path": "/webhooks/2/name", "value": SidecarWebhook},
		{"op": "test", "path": "/webhooks/2/matchConditions/0/name", "value": SidecarCondition},
		{"op": "replace", "path": "/webhooks/2/matchConditions/0/expression", "value": onSidecar},
	}
	if diff := cmp.Diff(want, ops); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}
	if _, ok := matchconditions.Patch(cfg, Conditions(false)); ok {
		t.Error("the chart's conditions are patched to themselves")
	}
}

// The chart holds the conditions without StatefulSet pods, as the controller puts them back.
func TestChartHoldsTheConditionsWithoutStatefulSets(t *testing.T) {
	mutating, _ := webhooktest.Configurations(t)
	pod, sidecar := Expressions(false)
	found := 0
	for _, w := range mutating.Webhooks {
		for _, c := range w.MatchConditions {
			switch {
			case w.Name == PodWebhook && c.Name == PodCondition:
				found++
				if !matchconditions.Same(c.Expression, pod) {
					t.Errorf("%s: %s, want %s", w.Name, c.Expression, pod)
				}
			case w.Name == SidecarWebhook && c.Name == SidecarCondition:
				found++
				if !matchconditions.Same(c.Expression, sidecar) {
					t.Errorf("%s: %s, want %s", w.Name, c.Expression, sidecar)
				}
			}
		}
	}
	if found != 2 {
		t.Errorf("the chart has %d of the two conditions", found)
	}
}
