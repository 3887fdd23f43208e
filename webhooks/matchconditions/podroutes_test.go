package matchconditions_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/webhooks/matchconditions"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
)

func routes() *matchconditions.PodRoutes {
	r := &matchconditions.PodRoutes{}
	r.Add(matchconditions.PodRoute{Kind: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}, Pods: "first"})
	r.Add(matchconditions.PodRoute{Kind: &corev1.Secret{}, List: &corev1.SecretList{}, Pods: "second"})
	return r
}

// Each route whose kind exists joins mpod.kb.io's condition and leaves msidecarset-pod.kb.io's, in one patch.
func TestPodRoutes(t *testing.T) {
	base, _ := matchconditions.Expressions(nil)
	cases := []struct {
		exists  []bool
		wantPod string
	}{
		{exists: []bool{false, false}, wantPod: base},
		{exists: []bool{true, false}, wantPod: "(" + base + ") || (first)"},
		{exists: []bool{false, true}, wantPod: "(" + base + ") || (second)"},
		{exists: []bool{true, true}, wantPod: "(" + base + ") || (first) || (second)"},
	}
	for _, tc := range cases {
		got := routes().Conditions(tc.exists)
		pod := got[matchconditions.Key{Webhook: matchconditions.PodWebhook, Condition: matchconditions.PodCondition}]
		sidecar := got[matchconditions.Key{Webhook: matchconditions.SidecarWebhook, Condition: matchconditions.SidecarCondition}]
		if pod != tc.wantPod || sidecar != "!("+tc.wantPod+")" {
			t.Errorf("exists %v: pod %q, sidecar %q; want pod %q and its complement", tc.exists, pod, sidecar, tc.wantPod)
		}
	}
}

func TestPodRoutesPatchBothWebhooks(t *testing.T) {
	offPod, offSidecar := matchconditions.Expressions(nil)
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{
		{Name: "mdeployment.kb.io"},
		{Name: matchconditions.PodWebhook, MatchConditions: []admissionregistrationv1.MatchCondition{{Name: matchconditions.PodCondition, Expression: offPod}}},
		{Name: matchconditions.SidecarWebhook, MatchConditions: []admissionregistrationv1.MatchCondition{
			{Name: matchconditions.SidecarCondition, Expression: offSidecar}, {Name: "sidecarsets-or-launch-priority", Expression: "true"}}},
	}}
	patch, ok := matchconditions.Patch(cfg, routes().Conditions([]bool{false, true}))
	var ops []map[string]string
	if !ok || json.Unmarshal(patch, &ops) != nil {
		t.Fatalf("patch %s (%v)", patch, ok)
	}
	onPod, onSidecar := matchconditions.Expressions([]string{"second"})
	want := []map[string]string{
		{"op": "test", "path": "/webhooks/1/name", "value": matchconditions.PodWebhook},
		{"op": "test", "path": "/webhooks/1/matchConditions/0/name", "value": matchconditions.PodCondition},
		{"op": "replace", "path": "/webhooks/1/matchConditions/0/expression", "value": onPod},
		{"op": "test", "path": "/webhooks/2/name", "value": matchconditions.SidecarWebhook},
		{"op": "test", "path": "/webhooks/2/matchConditions/0/name", "value": matchconditions.SidecarCondition},
		{"op": "replace", "path": "/webhooks/2/matchConditions/0/expression", "value": onSidecar},
	}
	if diff := cmp.Diff(want, ops); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}
	if _, ok := matchconditions.Patch(cfg, routes().Conditions([]bool{false, false})); ok {
		t.Error("the chart's conditions are patched to themselves")
	}
}

// The chart holds both conditions with no route taken, as the controller puts them back.
func TestChartHoldsTheConditionsWithoutRoutes(t *testing.T) {
	mutating, _ := webhooktest.Configurations(t)
	pod, sidecar := matchconditions.Expressions(nil)
	want := map[matchconditions.Key]string{
		{Webhook: matchconditions.PodWebhook, Condition: matchconditions.PodCondition}:         pod,
		{Webhook: matchconditions.SidecarWebhook, Condition: matchconditions.SidecarCondition}: sidecar,
	}
	found := 0
	for _, w := range mutating.Webhooks {
		for _, c := range w.MatchConditions {
			if expr, ok := want[matchconditions.Key{Webhook: w.Name, Condition: c.Name}]; ok {
				found++
				if !matchconditions.Same(c.Expression, expr) {
					t.Errorf("%s: %s, want %s", w.Name, c.Expression, expr)
				}
			}
		}
	}
	if found != 2 {
		t.Errorf("the chart has %d of the two conditions", found)
	}
}
