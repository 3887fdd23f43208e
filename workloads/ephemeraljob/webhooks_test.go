package ephemeraljob

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
	return ephemeralJobHandlers(admission.NewDecoder(s))
}

func request(op admissionv1.Operation, body, old string) admission.Request {
	return webhooktest.Request("EphemeralJob", "ephemeraljobs", "ns", "diag", op, body, old)
}

// userJob is upstream's documented example as a user writes it.
const userJob = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"EphemeralJob","metadata":{"name":"diag","namespace":"ns"},` +
	`"spec":{"selector":{"matchLabels":{"app":"web"}},"replicas":2,"parallelism":1,` +
	`"template":{"ephemeralContainers":[{"name":"debug","image":"busybox","command":["sh","-c","sleep 10"],"tty":true,"stdin":true,"targetContainerName":"app"}]},` +
	`"ttlSecondsAfterFinished":60}}`

func TestValidatingWebhook(t *testing.T) {
	h := handlers(t)[ValidateEphemeralJobPath]
	if resp := h.Handle(context.Background(), request(admissionv1.Create, userJob, "")); !resp.Allowed {
		t.Errorf("the documented example refused: %v", resp.Result)
	}
	bad := strings.Replace(userJob, `"tty":true`, `"tty":true,"ports":[{"containerPort":80}]`, 1)
	resp := h.Handle(context.Background(), request(admissionv1.Create, bad, ""))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(resp.Result.Message, "spec.template.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container") {
		t.Errorf("ports: allowed=%v %v", resp.Allowed, resp.Result)
	}
	noSelector := strings.Replace(userJob, `"selector":{"matchLabels":{"app":"web"}},`, "", 1)
	resp = h.Handle(context.Background(), request(admissionv1.Update, noSelector, userJob))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "spec.selector: Required value") {
		t.Errorf("dropping the selector: allowed=%v %v", resp.Allowed, resp.Result)
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Update, userJob, bad)); !resp.Allowed {
		t.Errorf("an update fixing a bad stored job refused: %v", resp.Result)
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Create, `{"spec":`, "")); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("undecodable body: allowed=%v %v", resp.Allowed, resp.Result)
	}
}

// The chart's entry: the served path, creates and updates of ephemeraljobs, failing closed like upstream.
func TestEphemeralJobWebhookConfiguration(t *testing.T) {
	mutating, validating := webhooktest.Configurations(t)
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"apps.kruise.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"ephemeraljobs"},
		},
	}}
	for _, w := range mutating.Webhooks {
		for _, r := range w.Rules {
			if len(r.Resources) > 0 && r.Resources[0] == "ephemeraljobs" {
				t.Errorf("mutating webhook %s selects EphemeralJobs; upstream has none", w.Name)
			}
		}
	}
	var paths []string
	for _, w := range validating.Webhooks {
		if w.Name == "vephemeraljob.kb.io" {
			webhooktest.CheckFailsClosed(t, w.Name, w.ClientConfig, ValidateEphemeralJobPath, w.Rules, rules, w.FailurePolicy, w.ObjectSelector)
			paths = append(paths, ValidateEphemeralJobPath)
		}
	}
	if diff := cmp.Diff([]string{ValidateEphemeralJobPath}, paths); diff != "" {
		t.Errorf("validating webhooks (-want +got):\n%s", diff)
	}
	srv := webhooktest.NewServer()
	if err := RegisterWebhooks(srv, runtime.NewScheme()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{ValidateEphemeralJobPath}, srv.Paths()); diff != "" {
		t.Errorf("served paths (-want +got):\n%s", diff)
	}
}
