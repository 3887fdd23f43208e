package cloneset

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
)

func podWebhook(t testing.TB) *webhook.Admission {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	chain := &webhooks.PodChain{}
	chain.Add(injectReadinessGate)
	srv := webhooktest.NewServer()
	if err := webhooks.RegisterPodChain(srv, scheme, chain); err != nil {
		t.Fatal(err)
	}
	return srv.Admission(t, webhooks.MutatePodPath)
}

// podDoc is a pod as the API server sends it; owner is its ownerReferences JSON, gates its readinessGates.
func podDoc(owner, gates string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-","namespace":"ns",` +
		`"ownerReferences":` + owner + `},"spec":{` + gates + `"futureField":{"kept":true},` +
		`"containers":[{"name":"app","image":"example.com/web:v1"}]}}`
}

const (
	cloneSetOwner    = `[{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","name":"web","uid":"u1","controller":true}]`
	statefulSetOwner = `[{"apiVersion":"apps.kruise.io/v1beta1","kind":"StatefulSet","name":"web","uid":"u1","controller":true}]`
	replicaSetOwner  = `[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"u1","controller":true}]`
	kruiseNotCtrl    = `[{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","name":"web","uid":"u1"}]`
)

func podRequest(op admissionv1.Operation, subResource, raw string) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req-1", Operation: op, SubResource: subResource, Namespace: "ns",
		Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Object:   runtime.RawExtension{Raw: []byte(raw)},
	}}
}

func TestPodWebhook(t *testing.T) {
	h := podWebhook(t)
	cases := []struct {
		name        string
		req         admission.Request
		wantAllowed bool
		wantCode    int32
		wantPatch   string // JSON list of operations; "" for none
	}{{
		name:        "CloneSet pod gets the gate",
		req:         podRequest(admissionv1.Create, "", podDoc(cloneSetOwner, "")),
		wantAllowed: true,
		wantPatch:   `[{"op":"add","path":"/spec/readinessGates","value":[{"conditionType":"KruisePodReady"}]}]`,
	}, {
		name:        "Advanced StatefulSet pod keeps its gates and gets ours after them",
		req:         podRequest(admissionv1.Create, "", podDoc(statefulSetOwner, `"readinessGates":[{"conditionType":"example.com/lb"}],`)),
		wantAllowed: true,
		wantPatch:   `[{"op":"add","path":"/spec/readinessGates/1","value":{"conditionType":"KruisePodReady"}}]`,
	}, {
		name:        "the gate is there already",
		req:         podRequest(admissionv1.Create, "", podDoc(cloneSetOwner, `"readinessGates":[{"conditionType":"KruisePodReady"}],`)),
		wantAllowed: true,
	}, {
		name:        "a ReplicaSet pod is left alone",
		req:         podRequest(admissionv1.Create, "", podDoc(replicaSetOwner, "")),
		wantAllowed: true,
	}, {
		name:        "an apps.kruise.io owner that is not the controller",
		req:         podRequest(admissionv1.Create, "", podDoc(kruiseNotCtrl, "")),
		wantAllowed: true,
	}, {
		name:        "updates are not mutated",
		req:         podRequest(admissionv1.Update, "", podDoc(cloneSetOwner, "")),
		wantAllowed: true,
	}, {
		name:        "subresources are not mutated",
		req:         podRequest(admissionv1.Create, "binding", `{"kind":"Binding"}`),
		wantAllowed: true,
	}, {
		name:     "malformed JSON",
		req:      podRequest(admissionv1.Create, "", `{"apiVersion":"v1","kind":"Pod","spec":`),
		wantCode: http.StatusBadRequest,
	}, {
		name:     "a field of the wrong type",
		req:      podRequest(admissionv1.Create, "", `{"apiVersion":"v1","kind":"Pod","metadata":{"ownerReferences":"web"}}`),
		wantCode: http.StatusBadRequest,
	}, {
		name:     "no object",
		req:      podRequest(admissionv1.Create, "", ""),
		wantCode: http.StatusBadRequest,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.Handle(context.Background(), tc.req)
			if resp.Allowed != tc.wantAllowed {
				t.Fatalf("allowed = %v, want %v (result %+v)", resp.Allowed, tc.wantAllowed, resp.Result)
			}
			if tc.wantCode != 0 && (resp.Result == nil || resp.Result.Code != tc.wantCode) {
				t.Errorf("result %+v, want code %d", resp.Result, tc.wantCode)
			}
			if diff := cmp.Diff(decodeJSON(t, tc.wantPatch), patchJSON(t, resp)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func patchJSON(t *testing.T, resp admission.Response) any {
	t.Helper()
	if len(resp.Patches) == 0 {
		return nil
	}
	raw, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	return decodeJSON(t, string(raw))
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	if s == "" {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// FuzzPodWebhook feeds arbitrary objects to the handler: it answers every one without panicking.
func FuzzPodWebhook(f *testing.F) {
	for _, seed := range []string{podDoc(cloneSetOwner, ""), podDoc(replicaSetOwner, ""), `{"kind":"Pod"}`, `{`, `null`, `[]`} {
		f.Add(seed)
	}
	h := podWebhook(f)
	f.Fuzz(func(t *testing.T, raw string) {
		resp := h.Handle(context.Background(), podRequest(admissionv1.Create, "", raw))
		if !resp.Allowed && (resp.Result == nil || resp.Result.Code == 0) {
			t.Fatalf("refused without a code: %+v", resp.Result)
		}
	})
}
