package resourcedistribution

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func testHandler(t *testing.T, refusal error) admission.Handler {
	t.Helper()
	s := runtime.NewScheme()
	if err := kruiseappsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return handlers(admission.NewDecoder(s), refusal)[ValidateResourceDistributionPath]
}

func request(op admissionv1.Operation, body, old string) admission.Request {
	return webhooktest.Request("ResourceDistribution", "resourcedistributions", "", "sample", op, body, old)
}

// sample is the seed's ResourceDistribution as a user writes it.
const sample = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ResourceDistribution","metadata":{"name":"sample"},` +
	`"spec":{"resource":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"game-demo"},"data":{"player_initial_lives":"3"}},` +
	`"targets":{"includedNamespaces":{"list":[{"name":"ns-1"},{"name":"ns-4"}]},"namespaceLabelSelector":{"matchLabels":{"group":"test"}},` +
	`"excludedNamespaces":{"list":[{"name":"ns-3"}]}}}}`

func TestValidatingWebhook(t *testing.T) {
	h := testHandler(t, nil)
	if resp := h.Handle(context.Background(), request(admissionv1.Create, sample, "")); !resp.Allowed {
		t.Errorf("the seed's sample refused: %v", resp.Result)
	}
	renamed := strings.Replace(sample, `"name":"game-demo"`, `"name":"other"`, 1)
	resp := h.Handle(context.Background(), request(admissionv1.Update, renamed, sample))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(resp.Result.Message, "spec.resource: Invalid value: \"v1 ConfigMap other\": resource apiVersion, kind, and name are immutable") {
		t.Errorf("a renamed resource: allowed=%v %v", resp.Allowed, resp.Result)
	}
	ambiguous := strings.Replace(sample, `{"name":"ns-3"}`, `{"name":"ns-1"}`, 1)
	if resp := h.Handle(context.Background(), request(admissionv1.Create, ambiguous, "")); resp.Allowed ||
		!strings.Contains(resp.Result.Message, "ambiguous targets because namespace [ns-1]") {
		t.Errorf("ambiguous targets: allowed=%v %v", resp.Allowed, resp.Result)
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Create, `{"spec":`, "")); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("undecodable body: allowed=%v %v", resp.Allowed, resp.Result)
	}
}

// With the gate off every create and update is refused, as upstream's; deletes pass.
func TestValidatingWebhookGateOff(t *testing.T) {
	h := testHandler(t, errGateOff)
	for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
		resp := h.Handle(context.Background(), request(op, sample, sample))
		if resp.Allowed || resp.Result.Code != http.StatusForbidden || resp.Result.Message != "feature-gate ResourceDistributionGate is not enabled" {
			t.Errorf("%s with the gate off: allowed=%v %v", op, resp.Allowed, resp.Result)
		}
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Delete, "", sample)); !resp.Allowed {
		t.Errorf("a delete refused: %v", resp.Result)
	}
}

func TestRegisterWebhooks(t *testing.T) {
	srv := webhooktest.NewServer()
	if err := RegisterWebhooks(srv, runtime.NewScheme(), nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(srv.Paths(), []string{ValidateResourceDistributionPath}) {
		t.Errorf("paths %v", srv.Paths())
	}
	if err := RegisterWebhooks(nil, nil, nil); err == nil {
		t.Error("no server accepted")
	}
}

// The chart's entry: the served path, creates and updates of resourcedistributions, failing closed like upstream.
func TestResourceDistributionWebhookConfiguration(t *testing.T) {
	srv := webhooktest.NewServer()
	if err := RegisterWebhooks(srv, runtime.NewScheme(), nil); err != nil {
		t.Fatal(err)
	}
	webhooktest.CheckKindWebhooks(t, "resourcedistributions",
		map[string]string{"vresourcedistribution.kb.io": ValidateResourceDistributionPath}, srv.Paths())
}
