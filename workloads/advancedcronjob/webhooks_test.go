package advancedcronjob

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

func handlers(t *testing.T) map[string]admission.Handler {
	t.Helper()
	s := runtime.NewScheme()
	if err := kruiseappsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return advancedCronJobHandlers(admission.NewDecoder(s))
}

func request(op admissionv1.Operation, body, old string) admission.Request {
	return webhooktest.Request("AdvancedCronJob", "advancedcronjobs", "ns", "acj", op, body, old)
}

// userAdvancedCronJob is the seed's AdvancedCronJob as a user writes it, with a field no Go type knows in its
// schemaless job template.
const userAdvancedCronJob = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"AdvancedCronJob","metadata":{"name":"acj","namespace":"ns"},` +
	`"spec":{"schedule":"*/1 * * * *","template":{"jobTemplate":{"spec":{"futureField":"kept","template":{"spec":{` +
	`"restartPolicy":"Never","containers":[{"name":"counter","image":"busybox:latest"}]}}}}}}}`

func TestDefaultingWebhook(t *testing.T) {
	resp := handlers(t)[MutateAdvancedCronJobPath].Handle(context.Background(), request(admissionv1.Create, userAdvancedCronJob, ""))
	if !resp.Allowed {
		t.Fatalf("refused: %v", resp.Result)
	}
	doc := webhooktest.ApplyJSONPatch(t, userAdvancedCronJob, resp)
	for path, want := range map[string]any{
		"spec.concurrencyPolicy": "Allow", "spec.paused": false,
		"spec.successfulJobsHistoryLimit": float64(3), "spec.failedJobsHistoryLimit": float64(1),
		"spec.template.jobTemplate.spec.futureField":                                         "kept",
		"spec.template.jobTemplate.spec.template.spec.restartPolicy":                         "Never",
		"spec.template.jobTemplate.spec.template.spec.dnsPolicy":                             "ClusterFirst",
		"spec.template.jobTemplate.spec.template.spec.containers.0.imagePullPolicy":          "Always",
		"spec.template.jobTemplate.spec.template.spec.containers.0.terminationMessagePolicy": "File",
		"spec.template.jobTemplate.spec.template.spec.schedulerName":                         "default-scheduler",
		"spec.template.jobTemplate.spec.template.spec.terminationGracePeriodSeconds":         float64(30),
	} {
		if got := webhooktest.JSONLookup(doc, path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
}

func TestValidatingWebhook(t *testing.T) {
	h := handlers(t)[ValidateAdvancedCronJobPath]
	bad := strings.Replace(userAdvancedCronJob, `"schedule":"*/1 * * * *"`, `"schedule":"every minute","timeZone":"Mars/Olympus"`, 1)
	resp := h.Handle(context.Background(), request(admissionv1.Create, bad, ""))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(resp.Result.Message, `spec.schedule: Invalid value: "every minute": expected exactly 5 fields, found 2`) ||
		!strings.Contains(resp.Result.Message, `spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`) {
		t.Errorf("bad schedule and zone: allowed=%v %v", resp.Allowed, resp.Result)
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Update, userAdvancedCronJob, bad)); !resp.Allowed {
		t.Errorf("an update fixing a bad stored AdvancedCronJob refused: %v", resp.Result)
	}
	changed := strings.Replace(userAdvancedCronJob, "busybox:latest", "busybox:1.36", 1)
	resp = h.Handle(context.Background(), request(admissionv1.Update, changed, userAdvancedCronJob))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "spec: Forbidden: updates to advancedcronjob spec for fields other than") {
		t.Errorf("a template change: allowed=%v %v", resp.Allowed, resp.Result)
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Create, `{"spec":`, "")); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("undecodable body: allowed=%v %v", resp.Allowed, resp.Result)
	}
}

// The chart's entries: upstream's paths, creates and updates of advancedcronjobs, failing closed like upstream.
func TestAdvancedCronJobWebhookConfiguration(t *testing.T) {
	srv := webhooktest.NewServer()
	if err := RegisterWebhooks(srv, runtime.NewScheme()); err != nil {
		t.Fatal(err)
	}
	webhooktest.CheckKindWebhooks(t, "advancedcronjobs", map[string]string{"madvancedcronjob.kb.io": MutateAdvancedCronJobPath, "vadvancedcronjob.kb.io": ValidateAdvancedCronJobPath}, srv.Paths())
}
