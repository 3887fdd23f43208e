package cloneset

import (
	"context"
	"encoding/json"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	clonesetadmission "github.com/flotilla-dev/flotilla/workloads/cloneset/admission"
)

const cloneSetUID = "cs-uid"

func cloneSetTestScheme(t testing.TB) *runtime.Scheme {
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

// cloneSetWebhooks builds both handlers over a fake reader holding objs, with funcs intercepting it.
func cloneSetWebhooks(t testing.TB, funcs interceptor.Funcs, objs ...client.Object) map[string]admission.Handler {
	t.Helper()
	scheme := cloneSetTestScheme(t)
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
	return cloneSetHandlers(reader, admission.NewDecoder(scheme))
}

// cloneSetRequest is an admission request for a CloneSet body (JSON) and, on updates, the stored one.
func cloneSetRequest(op admissionv1.Operation, body, old string) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req", Namespace: "ns", Name: "web", Operation: op,
		Kind:     metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"},
		Resource: metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"},
		Object:   runtime.RawExtension{Raw: []byte(body)},
	}}
	if old != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(old)}
	}
	return req
}

// userCloneSet is a CloneSet as a user writes it, with a field no Go type knows.
const userCloneSet = `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet",` +
	`"metadata":{"name":"web","namespace":"ns","uid":"cs-uid"},` +
	`"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},` +
	`"spec":{"containers":[{"name":"main","image":"nginx:1","futureField":"kept"}]}}}}`

// storedCloneSet is a defaulted CloneSet as the API server stores it; change edits it first.
func storedCloneSet(t testing.TB, change func(cs *kruiseappsv1alpha1.CloneSet)) string {
	t.Helper()
	cs := &kruiseappsv1alpha1.CloneSet{}
	if err := json.Unmarshal([]byte(userCloneSet), cs); err != nil {
		t.Fatal(err)
	}
	clonesetadmission.Default(cs)
	if change != nil {
		change(cs)
	}
	raw, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestCloneSetDefaultingCreate(t *testing.T) {
	h := cloneSetWebhooks(t, interceptor.Funcs{})[DefaultCloneSetPath]
	resp := h.Handle(context.Background(), cloneSetRequest(admissionv1.Create, userCloneSet, ""))
	if !resp.Allowed || len(resp.Patches) == 0 {
		t.Fatalf("allowed %v with %d patches (result %+v)", resp.Allowed, len(resp.Patches), resp.Result)
	}
	doc := webhooktest.ApplyJSONPatch(t, userCloneSet, resp)
	want := map[string]any{
		"spec.replicas":                                          float64(1),
		"spec.revisionHistoryLimit":                              float64(10),
		"spec.updateStrategy.type":                               "ReCreate",
		"spec.updateStrategy.partition":                          float64(0),
		"spec.updateStrategy.maxUnavailable":                     "20%",
		"spec.updateStrategy.maxSurge":                           float64(0),
		"spec.template.spec.restartPolicy":                       "Always",
		"spec.template.spec.containers.0.imagePullPolicy":        "Always",
		"spec.template.spec.containers.0.futureField":            "kept",
		"spec.template.spec.containers.0.terminationMessagePath": "/dev/termination-log",
	}
	for path, v := range want {
		if got := webhooktest.JSONLookup(doc, path); !cmp.Equal(got, v) {
			t.Errorf("%s = %#v, want %#v", path, got, v)
		}
	}
	if got := webhooktest.JSONLookup(doc, "spec.updateStrategy.inPlaceUpdateStrategy"); got != nil {
		t.Errorf("inPlaceUpdateStrategy %v set for ReCreate", got)
	}
}

func TestCloneSetDefaultingLeavesDefaultedAndForeignRequestsAlone(t *testing.T) {
	h := cloneSetWebhooks(t, interceptor.Funcs{})[DefaultCloneSetPath]
	stored := storedCloneSet(t, nil)
	bareTemplate := storedCloneSet(t, func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.Template.Spec = corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}}}
	})
	for name, req := range map[string]admission.Request{
		"defaulted create":               cloneSetRequest(admissionv1.Create, stored, ""),
		"update keeping a bare template": cloneSetRequest(admissionv1.Update, bareTemplate, bareTemplate),
		"delete":                         cloneSetRequest(admissionv1.Delete, "", stored),
		"scale subresource":              webhooktest.WithSubResource(cloneSetRequest(admissionv1.Update, `{`, stored), "scale"),
	} {
		t.Run(name, func(t *testing.T) {
			resp := h.Handle(context.Background(), req)
			if !resp.Allowed || len(resp.Patches) > 0 {
				t.Fatalf("allowed %v, patches %+v, result %+v", resp.Allowed, resp.Patches, resp.Result)
			}
		})
	}
}

func TestCloneSetDefaultingUpdateOfTheTemplate(t *testing.T) {
	h := cloneSetWebhooks(t, interceptor.Funcs{})[DefaultCloneSetPath]
	old := storedCloneSet(t, nil)
	cur := strings.Replace(old, `"image":"nginx:1"`, `"image":"nginx:2","imagePullPolicy":""`, 1)
	resp := h.Handle(context.Background(), cloneSetRequest(admissionv1.Update, cur, old))
	if !resp.Allowed {
		t.Fatalf("refused: %+v", resp.Result)
	}
	if got := webhooktest.JSONLookup(webhooktest.ApplyJSONPatch(t, cur, resp), "spec.template.spec.containers.0.imagePullPolicy"); got != "Always" {
		t.Errorf("imagePullPolicy %v, want Always", got)
	}
}

// Duplicate container names defeat the merge by name; the defaults are still applied and the validation
// refuses the names.
func TestCloneSetDefaultingDuplicateContainers(t *testing.T) {
	h := cloneSetWebhooks(t, interceptor.Funcs{})[DefaultCloneSetPath]
	body := strings.Replace(userCloneSet, `"containers":[`, `"containers":[{"name":"main","image":"a"},`, 1)
	resp := h.Handle(context.Background(), cloneSetRequest(admissionv1.Create, body, ""))
	if !resp.Allowed {
		t.Fatalf("refused: %+v", resp.Result)
	}
	if got := webhooktest.JSONLookup(webhooktest.ApplyJSONPatch(t, body, resp), "spec.replicas"); got != float64(1) {
		t.Errorf("replicas %v, want 1", got)
	}
}

func TestCloneSetWebhooksRefuseMalformedObjects(t *testing.T) {
	handlers := cloneSetWebhooks(t, interceptor.Funcs{})
	stored := storedCloneSet(t, nil)
	for _, path := range []string{DefaultCloneSetPath, ValidateCloneSetPath} {
		for name, req := range map[string]admission.Request{
			"truncated":         cloneSetRequest(admissionv1.Create, `{"spec":`, ""),
			"wrong type":        cloneSetRequest(admissionv1.Create, `{"spec":{"replicas":"three"}}`, ""),
			"array":             cloneSetRequest(admissionv1.Create, `[]`, ""),
			"empty":             cloneSetRequest(admissionv1.Create, ``, ""),
			"bad stored object": cloneSetRequest(admissionv1.Update, stored, `{"spec":{"template":7}}`),
		} {
			t.Run(path+" "+name, func(t *testing.T) {
				resp := handlers[path].Handle(context.Background(), req)
				if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest {
					t.Fatalf("allowed %v, result %+v; want a 400", resp.Allowed, resp.Result)
				}
			})
		}
	}
}

func TestCloneSetValidation(t *testing.T) {
	own := cloneSetPod("web-a", cloneSetUID)
	other := cloneSetPod("web-b", "other-uid")
	handlers := cloneSetWebhooks(t, interceptor.Funcs{}, own, other)
	inPlaceOnly := storedCloneSet(t, func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
	})
	cases := []struct {
		name      string
		req       admission.Request
		wantField string // "" when allowed
	}{
		{"valid create", cloneSetRequest(admissionv1.Create, storedCloneSet(t, nil), ""), ""},
		{"own pod to delete", cloneSetRequest(admissionv1.Create, storedCloneSet(t, withPodsToDelete("web-a")), ""), ""},
		{"selector not matching", cloneSetRequest(admissionv1.Create, storedCloneSet(t, func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.Selector.MatchLabels = map[string]string{"app": "other"}
		}), ""), "spec.template.metadata.labels: Invalid value"},
		{"missing pod to delete", cloneSetRequest(admissionv1.Create, storedCloneSet(t, withPodsToDelete("web-a", "web-x")), ""),
			"spec.scaleStrategy.podsToDelete[1]: Invalid value: \"web-x\": pod not found"},
		{"pod of another CloneSet", cloneSetRequest(admissionv1.Create, storedCloneSet(t, withPodsToDelete("web-b")), ""),
			"spec.scaleStrategy.podsToDelete[0]: Invalid value: \"web-b\": pod is not owned by this CloneSet"},
		{"not a pod name", cloneSetRequest(admissionv1.Create, storedCloneSet(t, withPodsToDelete("a/b")), ""),
			"spec.scaleStrategy.podsToDelete[0]"},
		{"InPlaceOnly image change", cloneSetRequest(admissionv1.Update, strings.Replace(inPlaceOnly, "nginx:1", "nginx:2", 1), inPlaceOnly), ""},
		{"InPlaceOnly env change", cloneSetRequest(admissionv1.Update,
			strings.Replace(inPlaceOnly, `"image":"nginx:1"`, `"image":"nginx:1","env":[{"name":"A"}]`, 1), inPlaceOnly),
			"spec.template.spec.containers[0].env: Forbidden: only image changes are allowed with updateStrategy.type InPlaceOnly"},
		{"selector change", cloneSetRequest(admissionv1.Update, storedCloneSet(t, func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}
		}), storedCloneSet(t, nil)), "spec.selector: Forbidden"},
		{"status subresource", webhooktest.WithSubResource(cloneSetRequest(admissionv1.Update, `{"spec":{"replicas":-1}}`, `{}`), "status"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := handlers[ValidateCloneSetPath].Handle(context.Background(), tc.req)
			if tc.wantField == "" {
				if !resp.Allowed {
					t.Fatalf("refused: %+v", resp.Result)
				}
				return
			}
			if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusUnprocessableEntity {
				t.Fatalf("allowed %v, result %+v; want a 422", resp.Allowed, resp.Result)
			}
			if !strings.Contains(resp.Result.Message, tc.wantField) {
				t.Errorf("message %q does not contain %q", resp.Result.Message, tc.wantField)
			}
		})
	}
}

func TestCloneSetValidationReportsEveryError(t *testing.T) {
	h := cloneSetWebhooks(t, interceptor.Funcs{})[ValidateCloneSetPath]
	body := storedCloneSet(t, func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.Replicas = ptr.To[int32](-1)
		cs.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](1)
	})
	resp := h.Handle(context.Background(), cloneSetRequest(admissionv1.Create, body, ""))
	msg := resp.Result.Message
	if resp.Allowed || !strings.Contains(msg, "spec.replicas") || !strings.Contains(msg, "spec.template.spec.activeDeadlineSeconds") {
		t.Fatalf("allowed %v, message %q", resp.Allowed, msg)
	}
}

func TestCloneSetValidationReaderFailure(t *testing.T) {
	h := cloneSetWebhooks(t, interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("cache unavailable")
		},
	})[ValidateCloneSetPath]
	resp := h.Handle(context.Background(), cloneSetRequest(admissionv1.Create, storedCloneSet(t, withPodsToDelete("web-a")), ""))
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusInternalServerError {
		t.Fatalf("allowed %v, result %+v; want a 500", resp.Allowed, resp.Result)
	}
}

func withPodsToDelete(names ...string) func(cs *kruiseappsv1alpha1.CloneSet) {
	return func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.ScaleStrategy.PodsToDelete = names }
}

func cloneSetPod(name, ownerUID string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: types.UID(ownerUID), Controller: ptr.To(true),
		}},
	}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}}}}
}

func TestRegisterCloneSetWebhooks(t *testing.T) {
	scheme := cloneSetTestScheme(t)
	reader := fake.NewClientBuilder().WithScheme(scheme).Build()
	srv := webhooktest.NewServer()
	if err := RegisterWebhooks(srv, reader, scheme, &webhooks.PodChain{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{DefaultCloneSetPath, ValidateCloneSetPath}, srv.Paths()); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if err := RegisterWebhooks(webhooktest.NewServer(), nil, scheme, &webhooks.PodChain{}); err == nil {
		t.Error("no error without a reader")
	}
}

// TestCloneSetWebhookConfiguration checks the chart's entries: served paths, creates and updates of
// clonesets, failing closed like upstream, and defaulting before the Rollout engine's freezing webhook.
func TestCloneSetWebhookConfiguration(t *testing.T) {
	mutating, validating := webhooktest.Configurations(t)
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"apps.kruise.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"clonesets"},
		},
	}}
	defaulting, freezing := -1, -1
	for i, w := range mutating.Webhooks {
		switch w.Name {
		case "dcloneset.kb.io":
			defaulting = i
			webhooktest.CheckFailsClosed(t, w.Name, w.ClientConfig, DefaultCloneSetPath, w.Rules, rules, w.FailurePolicy, w.ObjectSelector)
			if w.ReinvocationPolicy == nil || *w.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
				t.Errorf("webhook %s reinvocationPolicy is not IfNeeded", w.Name)
			}
		case "mcloneset.kb.io":
			freezing = i
		}
	}
	if defaulting < 0 || freezing < 0 || defaulting > freezing {
		t.Errorf("dcloneset.kb.io at %d, mcloneset.kb.io at %d: defaulting must come first", defaulting, freezing)
	}
	for _, w := range validating.Webhooks {
		if w.Name == "vcloneset.kb.io" {
			webhooktest.CheckFailsClosed(t, w.Name, w.ClientConfig, ValidateCloneSetPath, w.Rules, rules, w.FailurePolicy, w.ObjectSelector)
			return
		}
	}
	t.Error("no vcloneset.kb.io webhook")
}

// FuzzCloneSetWebhooks feeds arbitrary bodies to both handlers, on create and as updates of a stored
// CloneSet: every request is answered, a refusal always with a code, and nothing panics.
func FuzzCloneSetWebhooks(f *testing.F) {
	stored := storedCloneSet(f, nil)
	for _, seed := range []string{userCloneSet, stored, `{`, `null`, `[]`, `{"spec":{"template":{"spec":{"containers":[{},{}]}}}}`,
		`{"spec":{"scaleStrategy":{"podsToDelete":["web-a","","a/b","web-a"]},"updateStrategy":{"type":"InPlaceOnly","maxSurge":"x"}}}`} {
		f.Add(seed)
	}
	handlers := cloneSetWebhooks(f, interceptor.Funcs{}, cloneSetPod("web-a", cloneSetUID))
	f.Fuzz(func(t *testing.T, body string) {
		for _, req := range []admission.Request{
			cloneSetRequest(admissionv1.Create, body, ""), cloneSetRequest(admissionv1.Update, body, stored),
		} {
			for path, h := range handlers {
				resp := h.Handle(context.Background(), req)
				if !resp.Allowed && (resp.Result == nil || resp.Result.Code == 0) {
					t.Fatalf("%s refused without a code: %+v", path, resp.Result)
				}
			}
		}
	})
}
