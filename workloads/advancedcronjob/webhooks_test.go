package advancedcronjob

import (
	"context"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	acjadmission "github.com/flotilla-dev/flotilla/workloads/advancedcronjob/admission"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func handlers(t *testing.T, opts ...acjadmission.Options) map[string]admission.Handler {
	t.Helper()
	s := runtime.NewScheme()
	if err := kruiseappsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	var o acjadmission.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	return advancedCronJobHandlers(admission.NewDecoder(s), o)
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

// imageListAdvancedCronJob pre-pulls two images every night.
const imageListAdvancedCronJob = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"AdvancedCronJob","metadata":{"name":"acj","namespace":"ns"},` +
	`"spec":{"schedule":"0 2 * * *","template":{"imageListPullJobTemplate":{"metadata":{"labels":{"app":"prefetch"}},` +
	`"spec":{"images":["nginx:1.25","redis:7.0"],"parallelism":5,"completionPolicy":{"type":"Always"}}}}}}`

// The webhook reads an imageListPullJobTemplate; with ImagePullJobGate off it refuses one, as the ImageListPullJob
// webhook refuses the jobs, but lets one stored before the gate went off be paused.
func TestImageListPullJobTemplateWebhook(t *testing.T) {
	if resp := handlers(t)[ValidateAdvancedCronJobPath].Handle(context.Background(), request(admissionv1.Create, imageListAdvancedCronJob, "")); !resp.Allowed {
		t.Errorf("refused with the gate on: %v", resp.Result)
	}
	bad := strings.Replace(imageListAdvancedCronJob, `"type":"Always"`, `"type":"Never"`, 1)
	resp := handlers(t)[ValidateAdvancedCronJobPath].Handle(context.Background(), request(admissionv1.Create, bad, ""))
	if resp.Allowed || !strings.Contains(resp.Result.Message,
		`spec.template.imageListPullJobTemplate.spec.completionPolicy.type: Unsupported value: "Never": supported values: "Always"`) {
		t.Errorf("policy Never: allowed=%v %v", resp.Allowed, resp.Result)
	}
	off := handlers(t, admissionOptions(gates(t, nil)))[ValidateAdvancedCronJobPath]
	resp = off.Handle(context.Background(), request(admissionv1.Create, imageListAdvancedCronJob, ""))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity ||
		resp.Result.Message != "spec.template.imageListPullJobTemplate: Forbidden: feature-gate ImagePullJobGate is not enabled" {
		t.Errorf("gate off: allowed=%v %v", resp.Allowed, resp.Result)
	}
	paused := strings.Replace(imageListAdvancedCronJob, `"schedule":"0 2 * * *"`, `"schedule":"0 2 * * *","paused":true`, 1)
	if resp := off.Handle(context.Background(), request(admissionv1.Update, paused, imageListAdvancedCronJob)); !resp.Allowed {
		t.Errorf("pausing a stored one with the gate off refused: %v", resp.Result)
	}
	if resp := off.Handle(context.Background(), request(admissionv1.Create, userAdvancedCronJob, "")); !resp.Allowed {
		t.Errorf("a job template refused with the gate off: %v", resp.Result)
	}
	for _, on := range []string{"ImagePullJobGate", "PreDownloadImageForInPlaceUpdate", "PreDownloadImageForDaemonSetUpdate"} {
		if resp := handlers(t, admissionOptions(gates(t, map[string]bool{on: true})))[ValidateAdvancedCronJobPath].Handle(context.Background(),
			request(admissionv1.Create, imageListAdvancedCronJob, "")); !resp.Allowed {
			t.Errorf("refused with %s: %v", on, resp.Result)
		}
	}
}

// gates are the manager's gates with set on top of the defaults.
func gates(t *testing.T, set map[string]bool) feature.Gates {
	t.Helper()
	g, err := feature.NewGate()
	if err == nil {
		err = g.SetFromMap(set)
	}
	if err != nil {
		t.Fatal(err)
	}
	return feature.Resolve(g)
}

// The chart's entries: upstream's paths, creates and updates of advancedcronjobs, failing closed like upstream.
func TestAdvancedCronJobWebhookConfiguration(t *testing.T) {
	srv := webhooktest.NewServer()
	if err := RegisterWebhooks(srv, runtime.NewScheme(), acjadmission.Options{}); err != nil {
		t.Fatal(err)
	}
	webhooktest.CheckKindWebhooks(t, "advancedcronjobs", map[string]string{"madvancedcronjob.kb.io": MutateAdvancedCronJobPath, "vadvancedcronjob.kb.io": ValidateAdvancedCronJobPath}, srv.Paths())
}
