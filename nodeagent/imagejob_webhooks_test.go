package nodeagent

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
)

// userPullJob is the seed's ImagePullJob as a user writes it, with a field no Go type knows.
const userPullJob = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ImagePullJob","metadata":{"name":"j","namespace":"default"},` +
	`"spec":{"image":"nginx:1.9.1","parallelism":10,"selector":{"names":["node-1","node-2"]},"futureField":"kept",` +
	`"completionPolicy":{"activeDeadlineSeconds":1200,"ttlSecondsAfterFinished":300}}}`

const userListPullJob = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ImageListPullJob","metadata":{"name":"l","namespace":"default"},` +
	`"spec":{"images":["nginx:1.9.1","redis:7"],"completionPolicy":{}}}`

func imageJobHandler(t *testing.T, path string, refusal error) admission.Handler {
	t.Helper()
	srv := webhooktest.NewServer()
	if err := RegisterImageJobWebhooks(srv, crrTestScheme(t), refusal); err != nil {
		t.Fatal(err)
	}
	return srv.Admission(t, path)
}

func jobRequest(kind, resource, body string) admission.Request {
	return webhooktest.Request(kind, resource, "default", "j", admissionv1.Create, body, "")
}

func TestImagePullJobDefaultingWebhook(t *testing.T) {
	for _, tc := range []struct{ path, kind, resource, body, prefix string }{
		{MutateImagePullJobPath, "ImagePullJob", "imagepulljobs", userPullJob, "spec."},
		{MutateImageListPullJobPath, "ImageListPullJob", "imagelistpulljobs", userListPullJob, "spec."},
	} {
		resp := imageJobHandler(t, tc.path, nil).Handle(context.Background(), jobRequest(tc.kind, tc.resource, tc.body))
		if !resp.Allowed {
			t.Fatalf("%s refused: %v", tc.kind, resp.Result)
		}
		doc := webhooktest.ApplyJSONPatch(t, tc.body, resp)
		for path, want := range map[string]any{"completionPolicy.type": "Always", "pullPolicy.timeoutSeconds": float64(600),
			"pullPolicy.backoffLimit": float64(3), "imagePullPolicy": "IfNotPresent"} {
			if got := webhooktest.JSONLookup(doc, tc.prefix+path); got != want {
				t.Errorf("%s: %s = %v, want %v", tc.kind, path, got, want)
			}
		}
	}
	doc := webhooktest.ApplyJSONPatch(t, userPullJob, imageJobHandler(t, MutateImagePullJobPath, nil).Handle(context.Background(),
		jobRequest("ImagePullJob", "imagepulljobs", userPullJob)))
	if got := webhooktest.JSONLookup(doc, "spec.futureField"); got != "kept" {
		t.Errorf("a field the types do not know was dropped: %v", got)
	}
}

func TestImagePullJobValidatingWebhook(t *testing.T) {
	bad := strings.Replace(userPullJob, `"names":["node-1","node-2"]`, `"names":["node-1"],"matchLabels":{"node-type":"xxx"}`, 1)
	for _, tc := range []struct{ path, kind, resource, body, want string }{
		{ValidateImagePullJobPath, "ImagePullJob", "imagepulljobs", bad, "spec.selector: Invalid value"},
		{ValidateImageListPullJobPath, "ImageListPullJob", "imagelistpulljobs", strings.Replace(userListPullJob, `"redis:7"`, `"nginx:1.9.1"`, 1),
			`spec.images[1]: Duplicate value: "nginx:1.9.1"`},
	} {
		h := imageJobHandler(t, tc.path, nil)
		resp := h.Handle(context.Background(), jobRequest(tc.kind, tc.resource, tc.body))
		if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity || !strings.Contains(resp.Result.Message, tc.want) {
			t.Errorf("%s: allowed=%v %v; want 422 naming %q", tc.kind, resp.Allowed, resp.Result, tc.want)
		}
	}
	h := imageJobHandler(t, ValidateImagePullJobPath, nil)
	if resp := h.Handle(context.Background(), jobRequest("ImagePullJob", "imagepulljobs", userPullJob)); !resp.Allowed {
		t.Errorf("the seed's job refused: %v", resp.Result)
	}
}

// With the gate off the validating webhooks refuse every job, as upstream's; defaulting still answers.
func TestImagePullJobWebhooksRefuseWhileTheGateIsOff(t *testing.T) {
	off := errors.New("feature-gate ImagePullJobGate is not enabled")
	for _, tc := range []struct{ path, kind, resource, body string }{
		{ValidateImagePullJobPath, "ImagePullJob", "imagepulljobs", userPullJob},
		{ValidateImageListPullJobPath, "ImageListPullJob", "imagelistpulljobs", userListPullJob},
	} {
		resp := imageJobHandler(t, tc.path, off).Handle(context.Background(), jobRequest(tc.kind, tc.resource, tc.body))
		if resp.Allowed || resp.Result.Code != http.StatusForbidden || resp.Result.Message != off.Error() {
			t.Errorf("%s: allowed=%v %v; want 403 %q", tc.kind, resp.Allowed, resp.Result, off)
		}
	}
	resp := imageJobHandler(t, MutateImagePullJobPath, off).Handle(context.Background(), jobRequest("ImagePullJob", "imagepulljobs", userPullJob))
	if !resp.Allowed {
		t.Errorf("defaulting refused: %v", resp.Result)
	}
	h := imageJobHandler(t, ValidateImagePullJobPath, off)
	withFinalizer := strings.Replace(userPullJob, `"namespace":"default"`, `"namespace":"default","finalizers":["apps.kruise.io/deletion-protection"]`, 1)
	update := func(body, old string) admission.Request {
		return webhooktest.Request("ImagePullJob", "imagepulljobs", "default", "j", admissionv1.Update, body, old)
	}
	if resp := h.Handle(context.Background(), update(userPullJob, withFinalizer)); !resp.Allowed {
		t.Errorf("removing the finalizer of a job left from before refused: %v", resp.Result)
	}
	if resp := h.Handle(context.Background(), update(strings.Replace(userPullJob, "1.9.1", "1.9.2", 1), userPullJob)); resp.Allowed {
		t.Error("a change of the spec accepted while the gate is off")
	}
}

// The chart's entries: upstream's names and paths, creates and updates of each kind, failing closed.
func TestImageJobWebhookConfiguration(t *testing.T) {
	pull := map[string]string{"mimagepulljob.kb.io": MutateImagePullJobPath, "vimagepulljob.kb.io": ValidateImagePullJobPath}
	list := map[string]string{"mimagelistpulljob.kb.io": MutateImageListPullJobPath, "vimagelistpulljob.kb.io": ValidateImageListPullJobPath}
	webhooktest.CheckKindWebhooks(t, "imagepulljobs", pull, []string{MutateImagePullJobPath, ValidateImagePullJobPath})
	webhooktest.CheckKindWebhooks(t, "imagelistpulljobs", list, []string{MutateImageListPullJobPath, ValidateImageListPullJobPath})
	if err := RegisterImageJobWebhooks(webhooktest.NewServer(), nil, nil); err == nil {
		t.Error("no error without a scheme")
	}
}
