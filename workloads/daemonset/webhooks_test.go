package daemonset

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func handlers(t *testing.T) map[string]admission.Handler {
	t.Helper()
	s := runtime.NewScheme()
	if err := kruiseappsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return daemonSetHandlers(admission.NewDecoder(s))
}

func request(op admissionv1.Operation, body, old string) admission.Request {
	return webhooktest.Request("DaemonSet", "daemonsets", "ns", "agent", op, body, old)
}

// userDaemonSet is the seed's first Advanced DaemonSet as a user writes it, with a field no Go type knows.
const userDaemonSet = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"DaemonSet","metadata":{"name":"agent","namespace":"ns"},` +
	`"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"rollingUpdateType":"Standard"}},` +
	`"selector":{"matchLabels":{"app":"agent"}},"template":{"metadata":{"labels":{"app":"agent"}},` +
	`"spec":{"containers":[{"name":"agent","image":"agent:1","futureField":"kept"}]}}}}`

func TestDefaultingWebhook(t *testing.T) {
	resp := handlers(t)[DefaultDaemonSetPath].Handle(context.Background(), request(admissionv1.Create, userDaemonSet, ""))
	if !resp.Allowed {
		t.Fatalf("refused: %v", resp.Result)
	}
	doc := webhooktest.ApplyJSONPatch(t, userDaemonSet, resp)
	for path, want := range map[string]any{
		"spec.updateStrategy.rollingUpdate.maxUnavailable": float64(1), "spec.updateStrategy.rollingUpdate.maxSurge": float64(0),
		"spec.burstReplicas": float64(250), "spec.revisionHistoryLimit": float64(10),
		"spec.template.spec.containers.0.futureField": "kept",
	} {
		if got := webhooktest.JSONLookup(doc, path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	if got := webhooktest.JSONLookup(doc, "spec.template.spec.restartPolicy"); got != nil {
		t.Errorf("the template was defaulted (restartPolicy %v): its hash names the revisions", got)
	}
}

func TestValidatingWebhook(t *testing.T) {
	h := handlers(t)[ValidateDaemonSetPath]
	bad := strings.Replace(userDaemonSet, `"rollingUpdateType":"Standard"`, `"rollingUpdateType":"Standard","maxUnavailable":"120%"`, 1)
	resp := h.Handle(context.Background(), request(admissionv1.Create, bad, ""))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(resp.Result.Message, `spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "120%": must not be greater than 100%`) {
		t.Errorf("bad maxUnavailable: allowed=%v %v", resp.Allowed, resp.Result)
	}
	good := strings.Replace(userDaemonSet, `"rollingUpdateType":"Standard"`, `"rollingUpdateType":"Standard","maxUnavailable":1`, 1)
	if resp := h.Handle(context.Background(), request(admissionv1.Update, good, bad)); !resp.Allowed {
		t.Errorf("an update fixing a bad stored DaemonSet refused: %v", resp.Result)
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Create, `{"spec":`, "")); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("undecodable body: allowed=%v %v", resp.Allowed, resp.Result)
	}
}

// The chart's entries: served paths, creates and updates of daemonsets, failing closed like upstream, and
// defaulting before the Rollout engine's freezing webhook, which compares templates.
func TestDaemonSetWebhookConfiguration(t *testing.T) {
	mutating, validating := webhooktest.Configurations(t)
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"apps.kruise.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"daemonsets"},
		},
	}}
	defaulting, freezing := -1, -1
	for i, w := range mutating.Webhooks {
		switch w.Name {
		case "ddaemonset.kb.io":
			defaulting = i
			webhooktest.CheckFailsClosed(t, w.Name, w.ClientConfig, DefaultDaemonSetPath, w.Rules, rules, w.FailurePolicy, w.ObjectSelector)
		case "mdaemonset.kb.io":
			freezing = i
		}
	}
	if defaulting < 0 || freezing < 0 || defaulting > freezing {
		t.Errorf("ddaemonset.kb.io at %d, mdaemonset.kb.io at %d: defaulting must come first", defaulting, freezing)
	}
	var paths []string
	for _, w := range validating.Webhooks {
		if w.Name == "vdaemonset.kb.io" {
			webhooktest.CheckFailsClosed(t, w.Name, w.ClientConfig, ValidateDaemonSetPath, w.Rules, rules, w.FailurePolicy, w.ObjectSelector)
			paths = append(paths, ValidateDaemonSetPath)
		}
	}
	if diff := cmp.Diff([]string{ValidateDaemonSetPath}, paths); diff != "" {
		t.Errorf("validating webhooks (-want +got):\n%s", diff)
	}
	srv := webhooktest.NewServer()
	if err := RegisterWebhooks(srv, runtime.NewScheme()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{DefaultDaemonSetPath, ValidateDaemonSetPath}, srv.Paths()); diff != "" {
		t.Errorf("served paths (-want +got):\n%s", diff)
	}
}
