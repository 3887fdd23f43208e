package uniteddeployment

import (
	"context"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func testHandlers(t *testing.T) map[string]admission.Handler {
	t.Helper()
	s := runtime.NewScheme()
	if err := kruiseappsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return handlers(admission.NewDecoder(s))
}

func request(op admissionv1.Operation, body, old string) admission.Request {
	return webhooktest.Request("UnitedDeployment", "uniteddeployments", "default", "web", op, body, old)
}

// userUD is a UnitedDeployment of CloneSets over two zones as a user writes it, with a field no Go type knows.
const userUD = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"UnitedDeployment","metadata":{"name":"web","namespace":"default"},` +
	`"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"cloneSetTemplate":{"metadata":{"labels":{"app":"web"}},` +
	`"spec":{"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"main","image":"nginx","futureField":"kept"}]}}}}},` +
	`"topology":{"subsets":[{"name":"zone-a","nodeSelectorTerm":{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}},` +
	`{"name":"zone-b","replicas":"50%"}]}}}`

func TestDefaultingWebhook(t *testing.T) {
	resp := testHandlers(t)[MutateUnitedDeploymentPath].Handle(context.Background(), request(admissionv1.Create, userUD, ""))
	if !resp.Allowed {
		t.Fatalf("refused: %v", resp.Result)
	}
	doc := webhooktest.ApplyJSONPatch(t, userUD, resp)
	for path, want := range map[string]any{
		"spec.replicas": float64(1), "spec.revisionHistoryLimit": float64(10), "spec.updateStrategy.type": "Manual",
		"spec.template.cloneSetTemplate.spec.template.spec.restartPolicy":                "Always",
		"spec.template.cloneSetTemplate.spec.template.spec.containers.0.futureField":     "kept",
		"spec.template.cloneSetTemplate.spec.template.spec.containers.0.imagePullPolicy": "Always",
		"spec.topology.subsets.1.replicas":                                               "50%",
	} {
		if got := webhooktest.JSONLookup(doc, path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
}

func TestValidatingWebhook(t *testing.T) {
	h := testHandlers(t)[ValidateUnitedDeploymentPath]
	replicas := strings.Replace(userUD, `"spec":{"selector"`, `"spec":{"replicas":4,"selector"`, 1)
	if resp := h.Handle(context.Background(), request(admissionv1.Create, replicas, "")); !resp.Allowed {
		t.Errorf("valid UnitedDeployment refused: %v", resp.Result)
	}
	dup := strings.Replace(replicas, `"name":"zone-b"`, `"name":"zone-a"`, 1)
	resp := h.Handle(context.Background(), request(admissionv1.Create, dup, ""))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(resp.Result.Message, `spec.topology.subsets[1].name: Duplicate value: "zone-a"`) {
		t.Errorf("duplicate subset: allowed=%v %v", resp.Allowed, resp.Result)
	}
	moved := strings.Replace(replicas, `"values":["a"]`, `"values":["z"]`, 1)
	resp = h.Handle(context.Background(), request(admissionv1.Update, moved, replicas))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "spec.topology.subsets[0].nodeSelectorTerm: Forbidden: may not be changed in an update") {
		t.Errorf("moved subset: allowed=%v %v", resp.Allowed, resp.Result)
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Create, `{"spec":`, "")); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("undecodable body: allowed=%v %v", resp.Allowed, resp.Result)
	}
}

// The chart's entries: served paths, creates and updates of uniteddeployments, failing closed like upstream.
func TestUnitedDeploymentWebhookConfiguration(t *testing.T) {
	srv := webhooktest.NewServer()
	if err := RegisterWebhooks(srv, runtime.NewScheme()); err != nil {
		t.Fatal(err)
	}
	webhooktest.CheckKindWebhooks(t, "uniteddeployments", map[string]string{"muniteddeployment.kb.io": MutateUnitedDeploymentPath,
		"vuniteddeployment.kb.io": ValidateUnitedDeploymentPath}, srv.Paths())
}
