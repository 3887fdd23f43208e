package broadcastjob

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
	return webhooktest.Request("BroadcastJob", "broadcastjobs", "default", "bcj", op, body, old)
}

// userJob is the seed's first BroadcastJob as a user writes it, with a field no Go type knows.
const userJob = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"BroadcastJob","metadata":{"name":"bcj","namespace":"default"},` +
	`"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"counter","image":"busybox:latest",` +
	`"command":["/bin/sh","-c","for i in 9 8 7 6 5 4 3 2 1; do echo $i; done"],"futureField":"kept"}]}}}}`

func TestDefaultingWebhook(t *testing.T) {
	resp := testHandlers(t)[MutateBroadcastJobPath].Handle(context.Background(), request(admissionv1.Create, userJob, ""))
	if !resp.Allowed {
		t.Fatalf("refused: %v", resp.Result)
	}
	doc := webhooktest.ApplyJSONPatch(t, userJob, resp)
	for path, want := range map[string]any{
		"spec.completionPolicy.type": "Always", "spec.failurePolicy.type": "FailFast", "spec.parallelism": float64(1<<31 - 1),
		"spec.template.spec.restartPolicy": "Never", "spec.template.spec.dnsPolicy": "ClusterFirst",
		"spec.template.spec.containers.0.futureField": "kept",
	} {
		if got := webhooktest.JSONLookup(doc, path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
}

func TestValidatingWebhook(t *testing.T) {
	h := testHandlers(t)[ValidateBroadcastJobPath]
	bad := strings.Replace(userJob, `"restartPolicy":"Never"`, `"restartPolicy":"Always"`, 1)
	resp := h.Handle(context.Background(), request(admissionv1.Create, bad, ""))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(resp.Result.Message, `spec.template.spec.restartPolicy: Invalid value: "Always": pod restartPolicy can only be Never or OnFailure`) {
		t.Errorf("restartPolicy Always: allowed=%v %v", resp.Allowed, resp.Result)
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Update, userJob, bad)); !resp.Allowed {
		t.Errorf("an update fixing a bad stored job refused: %v", resp.Result)
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Create, `{"spec":`, "")); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("undecodable body: allowed=%v %v", resp.Allowed, resp.Result)
	}
}

// The chart's entries: served paths, creates and updates of broadcastjobs, failing closed like upstream.
func TestBroadcastJobWebhookConfiguration(t *testing.T) {
	srv := webhooktest.NewServer()
	if err := RegisterWebhooks(srv, runtime.NewScheme()); err != nil {
		t.Fatal(err)
	}
	webhooktest.CheckKindWebhooks(t, "broadcastjobs", map[string]string{"mbroadcastjob.kb.io": MutateBroadcastJobPath, "vbroadcastjob.kb.io": ValidateBroadcastJobPath}, srv.Paths())
}
