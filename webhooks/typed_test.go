package webhooks

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
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

// Peers are the namespace's objects of the kind, read through the reader; the request's namespace stands in
// for a manifest without one.
func TestValidatingWithPeers(t *testing.T) {
	taken := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "taken", Labels: map[string]string{"claims": "db"}}}
	elsewhere := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "far", Labels: map[string]string{"claims": "web"}}}
	reader := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(taken, elsewhere).Build()
	h := ValidatingWithPeers(admission.NewDecoder(scheme.Scheme), reader, "ConfigMap",
		func(cur, _ *corev1.ConfigMap, peers *corev1.ConfigMapList) (field.ErrorList, []string) {
			for _, p := range peers.Items {
				if p.Namespace != cur.Namespace {
					t.Errorf("peer %s/%s listed for an object of %q", p.Namespace, p.Name, cur.Namespace)
				}
				if p.Name != cur.Name && p.Labels["claims"] == cur.Labels["claims"] {
					return field.ErrorList{field.Invalid(field.NewPath("metadata", "labels"), cur.Labels, "claimed by "+p.Name)}, nil
				}
			}
			return nil, []string{"checked against " + strconv.Itoa(len(peers.Items))}
		})
	create := func(claims string) admission.Request {
		req := configMapRequest(admissionv1.Create, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"claims":"`+claims+`"}}}`, "")
		req.Namespace = "ns"
		return req
	}
	resp := h.Handle(context.Background(), create("db"))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity || !strings.Contains(resp.Result.Message, "claimed by taken") {
		t.Errorf("a second claim in the namespace: allowed %v, result %+v, want 422 naming the peer", resp.Allowed, resp.Result)
	}
	resp = h.Handle(context.Background(), create("web"))
	if !resp.Allowed || len(resp.Warnings) != 1 || resp.Warnings[0] != "checked against 1" {
		t.Errorf("a claim only another namespace makes: allowed %v, warnings %v, result %+v", resp.Allowed, resp.Warnings, resp.Result)
	}
}
