package nodeagent

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func crrTestScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := kruiseappsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// crrWebhook builds the handler over a fake reader holding objs, with funcs intercepting it.
func crrWebhook(t testing.TB, funcs interceptor.Funcs, objs ...client.Object) admission.Handler {
	t.Helper()
	scheme := crrTestScheme(t)
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
	srv := webhooktest.NewServer()
	if err := RegisterWebhook(srv, reader, scheme); err != nil {
		t.Fatal(err)
	}
	return srv.Admission(t, MutateContainerRecreateRequestPath)
}

// crrRequest is an admission request for a ContainerRecreateRequest body (JSON) and, on updates, the stored one.
func crrRequest(op admissionv1.Operation, body, old string) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req", Namespace: "ns", Name: "r", Operation: op,
		Kind:     metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "ContainerRecreateRequest"},
		Resource: metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "containerrecreaterequests"},
		Object:   runtime.RawExtension{Raw: []byte(body)},
	}}
	if old != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(old)}
	}
	return req
}

// userCRR is a request as a user writes it, without a namespace and with a field no Go type knows.
const userCRR = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ContainerRecreateRequest",` +
	`"metadata":{"name":"r","labels":{"team":"a"}},` +
	`"spec":{"podName":"p","containers":[{"name":"app","futureField":"kept"}],"ttlSecondsAfterFinished":60}}`

// crrPod is a running pod p in ns on node n1 with one started container app, which has an exec preStop hook.
func crrPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-uid"},
		Spec: corev1.PodSpec{
			NodeName: "n1", TerminationGracePeriodSeconds: ptr.To[int64](30),
			Containers: []corev1.Container{{
				Name: "app", Image: "nginx:1",
				Ports:     []corev1.ContainerPort{{ContainerPort: 80}},
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"quit"}}}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", ContainerID: "containerd://c1", RestartCount: 3},
		}},
	}
}

func TestCRRWebhookCreateFillsTheRequest(t *testing.T) {
	h := crrWebhook(t, interceptor.Funcs{}, crrPod())
	resp := h.Handle(context.Background(), crrRequest(admissionv1.Create, userCRR, ""))
	if !resp.Allowed || len(resp.Patches) == 0 {
		t.Fatalf("allowed %v with %d patches (result %+v)", resp.Allowed, len(resp.Patches), resp.Result)
	}
	doc := webhooktest.ApplyJSONPatch(t, userCRR, resp)
	want := map[string]any{
		"spec.strategy.failurePolicy":                  "Fail",
		"spec.strategy.terminationGracePeriodSeconds":  float64(30),
		"spec.ttlSecondsAfterFinished":                 float64(60),
		"spec.containers.0.futureField":                "kept",
		"spec.containers.0.preStop.exec.command.0":     "quit",
		"spec.containers.0.ports.0.containerPort":      float64(80),
		"spec.containers.0.statusContext.containerID":  "containerd://c1",
		"spec.containers.0.statusContext.restartCount": float64(3),
	}
	for path, v := range want {
		if got := webhooktest.JSONLookup(doc, path); !cmp.Equal(got, v) {
			t.Errorf("%s = %#v, want %#v", path, got, v)
		}
	}
	// Label keys hold dots, which jsonLookup splits on.
	labels, _ := webhooktest.JSONLookup(doc, "metadata.labels").(map[string]any)
	wantLabels := map[string]any{"team": "a", "crr.apps.kruise.io/pod-uid": "pod-uid",
		"crr.apps.kruise.io/node-name": "n1", "crr.apps.kruise.io/active": "true"}
	if diff := cmp.Diff(wantLabels, labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}

func TestCRRWebhookRefusals(t *testing.T) {
	stored := `{"metadata":{"name":"r","namespace":"ns","labels":{"crr.apps.kruise.io/pod-uid":"pod-uid","crr.apps.kruise.io/node-name":"n1"}},` +
		`"spec":{"podName":"p","containers":[{"name":"app"}],"strategy":{"failurePolicy":"Fail"}}}`
	finished := strings.Replace(stored, `"spec":`, `"status":{"phase":"Completed"},"spec":`, 1)
	cases := []struct {
		name string
		req  admission.Request
		want string // "" when allowed
	}{
		{"unknown container", crrRequest(admissionv1.Create, strings.Replace(userCRR, `"name":"app"`, `"name":"x"`, 1), ""),
			`spec.containers[0].name: Invalid value: "x": container "x" not found in pod "p"`},
		{"pod not found", crrRequest(admissionv1.Create, strings.Replace(userCRR, `"podName":"p"`, `"podName":"q"`, 1), ""),
			`spec.podName: Invalid value: "q": pod "q" not found in namespace "ns"`},
		{"not a pod name", crrRequest(admissionv1.Create, strings.Replace(userCRR, `"podName":"p"`, `"podName":"P/x"`, 1), ""),
			`spec.podName: Invalid value: "P/x"`},
		{"spec changed", crrRequest(admissionv1.Update, strings.Replace(stored, `"podName":"p"`, `"podName":"q"`, 1), stored),
			"spec.podName: Forbidden: field is immutable"},
		{"node label changed", crrRequest(admissionv1.Update, strings.Replace(stored, `"n1"`, `"n2"`, 1), stored),
			"metadata.labels[crr.apps.kruise.io/node-name]: Forbidden"},
		{"status and active label", crrRequest(admissionv1.Update, finished, stored), ""},
		{"delete", crrRequest(admissionv1.Delete, "", stored), ""},
		{"status subresource", webhooktest.WithSubResource(crrRequest(admissionv1.Update, `{"spec":{"podName":"q"}}`, stored), "status"), ""},
	}
	h := crrWebhook(t, interceptor.Funcs{}, crrPod())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.Handle(context.Background(), tc.req)
			if tc.want == "" {
				if !resp.Allowed || len(resp.Patches) > 0 {
					t.Fatalf("allowed %v, patches %+v, result %+v", resp.Allowed, resp.Patches, resp.Result)
				}
				return
			}
			if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusUnprocessableEntity {
				t.Fatalf("allowed %v, result %+v; want a 422", resp.Allowed, resp.Result)
			}
			if !strings.Contains(resp.Result.Message, tc.want) {
				t.Errorf("message %q does not contain %q", resp.Result.Message, tc.want)
			}
		})
	}
}

func TestCRRWebhookErrors(t *testing.T) {
	failing := crrWebhook(t, interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("apiserver unavailable")
		},
	})
	if resp := failing.Handle(context.Background(), crrRequest(admissionv1.Create, userCRR, "")); resp.Allowed ||
		resp.Result == nil || resp.Result.Code != http.StatusInternalServerError {
		t.Errorf("reader failure: allowed %v, result %+v; want a 500", resp.Allowed, resp.Result)
	}
	h := crrWebhook(t, interceptor.Funcs{}, crrPod())
	for name, req := range map[string]admission.Request{
		"truncated":         crrRequest(admissionv1.Create, `{"spec":`, ""),
		"wrong type":        crrRequest(admissionv1.Create, `{"spec":{"containers":"app"}}`, ""),
		"empty":             crrRequest(admissionv1.Create, ``, ""),
		"bad stored object": crrRequest(admissionv1.Update, userCRR, `{"spec":7}`),
	} {
		t.Run(name, func(t *testing.T) {
			resp := h.Handle(context.Background(), req)
			if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest {
				t.Fatalf("allowed %v, result %+v; want a 400", resp.Allowed, resp.Result)
			}
		})
	}
	if err := RegisterWebhook(webhooktest.NewServer(), nil, crrTestScheme(t)); err == nil {
		t.Error("no error without a reader")
	}
}

// TestCRRWebhookConfiguration checks the chart's entry: upstream's name and path, creates and updates of
// every request, failing closed.
func TestCRRWebhookConfiguration(t *testing.T) {
	mutating, _ := webhooktest.Configurations(t)
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"apps.kruise.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"containerrecreaterequests"},
		},
	}}
	for _, w := range mutating.Webhooks {
		if w.Name == "mcontainerrecreaterequest.kb.io" {
			webhooktest.CheckFailsClosed(t, w.Name, w.ClientConfig, MutateContainerRecreateRequestPath, w.Rules, rules, w.FailurePolicy, w.ObjectSelector)
			return
		}
	}
	t.Error("no mcontainerrecreaterequest.kb.io webhook")
}

// FuzzCRRWebhook feeds arbitrary bodies to the handler, on create and as updates of a stored request:
// every request is answered, a refusal always with a code, and nothing panics.
func FuzzCRRWebhook(f *testing.F) {
	for _, seed := range []string{userCRR, `{`, `null`, `[]`, `{"spec":{"containers":[{},{"name":"app"},{"name":"app"}]}}`,
		`{"spec":{"podName":"p","containers":[{"name":"app","preStop":{}}],"strategy":{"failurePolicy":"x","unreadyGracePeriodSeconds":-1}}}`} {
		f.Add(seed)
	}
	h := crrWebhook(f, interceptor.Funcs{}, crrPod())
	f.Fuzz(func(t *testing.T, body string) {
		for _, req := range []admission.Request{
			crrRequest(admissionv1.Create, body, ""), crrRequest(admissionv1.Update, body, userCRR),
		} {
			resp := h.Handle(context.Background(), req)
			if !resp.Allowed && (resp.Result == nil || resp.Result.Code == 0) {
				t.Fatalf("refused without a code: %+v", resp.Result)
			}
		}
	})
}

// TestCRRWebhookAcceptsUpstreamPluginRequests: upstream's kubectl-kruise sends each container's preStop and
// ports with the request; the webhook accepts them and puts the pod's in their place.
func TestCRRWebhookAcceptsUpstreamPluginRequests(t *testing.T) {
	h := crrWebhook(t, interceptor.Funcs{}, crrPod())
	sent := strings.Replace(userCRR, `"name":"app"`,
		`"name":"app","preStop":{"exec":{"command":["stale"]}},"ports":[{"containerPort":1}]`, 1)
	resp := h.Handle(context.Background(), crrRequest(admissionv1.Create, sent, ""))
	if !resp.Allowed {
		t.Fatalf("refused the request upstream's plugin sends: %+v", resp.Result)
	}
	doc := webhooktest.ApplyJSONPatch(t, sent, resp)
	for path, want := range map[string]any{
		"spec.containers.0.preStop.exec.command.0": "quit", "spec.containers.0.ports.0.containerPort": float64(80),
	} {
		if got := webhooktest.JSONLookup(doc, path); !cmp.Equal(got, want) {
			t.Errorf("%s = %#v, want the pod's %#v", path, got, want)
		}
	}
}
