package webhooks

import (
	"context"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func configMapRequest(op admissionv1.Operation, raw, oldRaw string) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Object: runtime.RawExtension{Raw: []byte(raw)}}}
	if oldRaw != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(oldRaw)}
	}
	return req
}

func TestDefaulting(t *testing.T) {
	h := Defaulting(admission.NewDecoder(scheme.Scheme), "ConfigMap", func(cur, old *corev1.ConfigMap) {
		if cur.Data == nil {
			cur.Data = map[string]string{}
		}
		cur.Data["defaulted"] = "yes"
		if old != nil {
			cur.Data["old"] = old.Data["v"]
		}
	})
	raw := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"v":"1"},"unknownField":{"kept":true}}`
	resp := h.Handle(context.Background(), configMapRequest(admissionv1.Update, raw, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"v":"0"}}`))
	if !resp.Allowed || len(resp.Patches) != 2 {
		t.Fatalf("update: allowed %v, patches %v", resp.Allowed, resp.Patches)
	}
	for _, p := range resp.Patches {
		if !strings.HasPrefix(p.Path, "/data/") {
			t.Errorf("patch %v touches more than the defaulted data (the unknown field must stay)", p)
		}
	}
	resp = h.Handle(context.Background(), configMapRequest(admissionv1.Create, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"defaulted":"yes"}}`, ""))
	if !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("create of a defaulted object: allowed %v, patches %v, want no patch", resp.Allowed, resp.Patches)
	}
}

func TestValidating(t *testing.T) {
	h := Validating(admission.NewDecoder(scheme.Scheme), "ConfigMap", func(cur, _ *corev1.ConfigMap) field.ErrorList {
		if cur.Data["v"] == "" {
			return field.ErrorList{field.Required(field.NewPath("data", "v"), "")}
		}
		return nil
	})
	resp := h.Handle(context.Background(), configMapRequest(admissionv1.Create, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`, ""))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity || !strings.Contains(resp.Result.Message, "data.v") {
		t.Errorf("invalid object: allowed %v, result %+v, want 422 naming data.v", resp.Allowed, resp.Result)
	}
	resp = h.Handle(context.Background(), configMapRequest(admissionv1.Create, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"v":"1"}}`, ""))
	if !resp.Allowed {
		t.Errorf("valid object refused: %+v", resp.Result)
	}
	resp = h.Handle(context.Background(), configMapRequest(admissionv1.Create, `{not json`, ""))
	if resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("undecodable object: allowed %v, result %+v, want 400", resp.Allowed, resp.Result)
	}
}
