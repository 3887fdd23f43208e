package podrouting

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
)

func configuration(pod, sidecar string) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{
		{Name: "mdeployment.kb.io"},
		{Name: PodWebhook, MatchConditions: []admissionregistrationv1.MatchCondition{{Name: PodCondition, Expression: pod}}},
		{Name: SidecarWebhook, MatchConditions: []admissionregistrationv1.MatchCondition{
			{Name: SidecarCondition, Expression: sidecar}, {Name: "sidecarsets-or-launch-priority", Expression: "true"}}},
	}}
}

func TestPatch(t *testing.T) {
	offPod, offSidecar := Expressions(false)
	onPod, onSidecar := Expressions(true)
	patch, ok := Patch(configuration(offPod, offSidecar), true)
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
	if _, ok := Patch(configuration(onPod, onSidecar), true); ok {
		t.Error("conditions that hold the value already are patched")
	}
	cfg := configuration(offPod, offSidecar)
	cfg.Webhooks = cfg.Webhooks[:2] // no sidecarset module
	if patch, ok := Patch(cfg, true); !ok || len(patch) == 0 {
		t.Error("mpod.kb.io alone is not patched")
	}
	if _, ok := Patch(configuration(offPod, offSidecar), false); ok {
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
				if !Same(c.Expression, pod) {
					t.Errorf("%s: %s, want %s", w.Name, c.Expression, pod)
				}
			case w.Name == SidecarWebhook && c.Name == SidecarCondition:
				found++
				if !Same(c.Expression, sidecar) {
					t.Errorf("%s: %s, want %s", w.Name, c.Expression, sidecar)
				}
			}
		}
	}
	if found != 2 {
		t.Errorf("the chart has %d of the two conditions", found)
	}
}
