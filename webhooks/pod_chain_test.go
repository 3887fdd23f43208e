package webhooks

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
)

func podChainScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// annotate is a mutation that appends name to the pod's "order" annotation, so a test sees which
// mutations ran and in which order.
func annotate(name string) PodMutation {
	return func(_ context.Context, pod *corev1.Pod) (bool, error) {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations["order"] += name
		return true, nil
	}
}

func unchanged(context.Context, *corev1.Pod) (bool, error) { return false, nil }

func refuse(context.Context, *corev1.Pod) (bool, error) {
	return false, errors.New("spec.containers[0].name: the sidecar clashes")
}

func servedChain(t *testing.T, mutations ...PodMutation) *webhooktest.Server {
	t.Helper()
	chain := &PodChain{}
	for _, m := range mutations {
		chain.Add(m)
	}
	srv := webhooktest.NewServer()
	if err := RegisterPodChain(srv, podChainScheme(t), chain); err != nil {
		t.Fatal(err)
	}
	return srv
}

func chainRequest(op admissionv1.Operation, raw string) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req", Operation: op, Namespace: "ns",
		Kind:   metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Object: runtime.RawExtension{Raw: []byte(raw)},
	}}
}

const chainPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"futureField":1,` +
	`"containers":[{"name":"app","image":"example.com/app:v1"}]}}`

func TestPodChain(t *testing.T) {
	cases := []struct {
		name      string
		mutations []PodMutation
		req       admission.Request
		wantCode  int32
		wantOrder any // the patched "order" annotation; nil for no patch
	}{
		{name: "every mutation runs, in the order added, each seeing the last", mutations: []PodMutation{annotate("a"), unchanged, annotate("b")},
			req: chainRequest(admissionv1.Create, chainPod), wantOrder: "ab"},
		{name: "no change, no patch", mutations: []PodMutation{unchanged},
			req: chainRequest(admissionv1.Create, chainPod)},
		{name: "updates pass unchanged", mutations: []PodMutation{annotate("a")},
			req: chainRequest(admissionv1.Update, chainPod)},
		{name: "subresources pass unchanged", mutations: []PodMutation{annotate("a")},
			req: webhooktest.WithSubResource(chainRequest(admissionv1.Create, `{"kind":"Binding"}`), "binding")},
		{name: "malformed pod", mutations: []PodMutation{annotate("a")},
			req: chainRequest(admissionv1.Create, `{"kind":"Pod","spec":`), wantCode: http.StatusBadRequest},
		{name: "a mutation's error refuses the pod", mutations: []PodMutation{annotate("a"), refuse, annotate("b")},
			req: chainRequest(admissionv1.Create, chainPod), wantCode: http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := servedChain(t, tc.mutations...).Admission(t, MutatePodPath).Handle(context.Background(), tc.req)
			if tc.wantCode != 0 {
				if resp.Allowed || resp.Result == nil || resp.Result.Code != tc.wantCode {
					t.Fatalf("allowed %v, result %+v; want code %d", resp.Allowed, resp.Result, tc.wantCode)
				}
				return
			}
			if !resp.Allowed {
				t.Fatalf("refused: %+v", resp.Result)
			}
			var got any
			if len(resp.Patches) > 0 {
				doc := webhooktest.ApplyJSONPatch(t, string(tc.req.Object.Raw), resp)
				got = webhooktest.JSONLookup(doc, "metadata.annotations.order")
				if kept := webhooktest.JSONLookup(doc, "spec.futureField"); kept != float64(1) {
					t.Errorf("a field no type knows was not kept: %v", kept)
				}
			}
			if diff := cmp.Diff(tc.wantOrder, got); diff != "" {
				t.Errorf("order annotation (-want +got):\n%s", diff)
			}
		})
	}
}

// An empty chain is not served: a manager whose modules change no pod answers no pod webhook.
func TestEmptyPodChainIsNotServed(t *testing.T) {
	if paths := servedChain(t).Paths(); len(paths) != 0 {
		t.Errorf("served %v", paths)
	}
}

func TestRegisterPodChainNeedsItsInputs(t *testing.T) {
	if err := RegisterPodChain(webhooktest.NewServer(), nil, &PodChain{}); err == nil {
		t.Error("no error without a scheme")
	}
	if err := RegisterPodChain(nil, runtime.NewScheme(), &PodChain{}); err == nil {
		t.Error("no error without a server")
	}
	if err := RegisterPodChain(webhooktest.NewServer(), runtime.NewScheme(), nil); err == nil {
		t.Error("no error without a chain")
	}
}

// TestPodWebhookConfiguration checks the chart's entry: served path, never blocking, pods only, upstream's
// namespace exclusions.
func TestPodWebhookConfiguration(t *testing.T) {
	mutating, _ := webhooktest.Configurations(t)
	var w *admissionregistrationv1.MutatingWebhook
	for i := range mutating.Webhooks {
		if mutating.Webhooks[i].Name == "mpod.kb.io" {
			w = &mutating.Webhooks[i]
		}
	}
	if w == nil {
		t.Fatal("no mpod.kb.io webhook")
	}
	if got := webhooktest.ServicePath(t, w.Name, w.ClientConfig); got != MutatePodPath {
		t.Errorf("path %q, want %q", got, MutatePodPath)
	}
	if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Ignore {
		t.Error("failurePolicy is not Ignore: a stopped manager would block every pod")
	}
	if w.SideEffects == nil || *w.SideEffects != admissionregistrationv1.SideEffectClassNone || w.ObjectSelector != nil {
		t.Errorf("sideEffects %v, objectSelector %v", w.SideEffects, w.ObjectSelector)
	}
	wantRules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}
	if diff := cmp.Diff(wantRules, w.Rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	selector, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]bool{"apps": true, "kube-system": false, "control-plane": false} {
		nsLabels := labels.Set{"kubernetes.io/metadata.name": ns}
		if ns == "control-plane" {
			nsLabels["control-plane"] = "flotilla-manager"
		}
		if got := selector.Matches(nsLabels); got != want {
			t.Errorf("namespace %s selected = %v, want %v", ns, got, want)
		}
	}
}
