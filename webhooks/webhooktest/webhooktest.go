// Package webhooktest is what the tests of admission handlers share, whichever module owns the handlers: a
// server that keeps what is registered on it, the chart's webhook configurations the handlers must match,
// and reading the JSON patches handlers answer with.
package webhooktest

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

// ConfigurationsFile is where the chart keeps Flotilla's admission webhook configurations, from the
// repository root.
const ConfigurationsFile = "charts/flotilla/webhooks/webhook-configurations.yaml"

// Server keeps the handlers registered on it; its other methods are not for use.
type Server struct {
	webhook.Server
	Handlers map[string]http.Handler
}

// NewServer returns a Server with nothing registered.
func NewServer() *Server { return &Server{Handlers: map[string]http.Handler{}} }

// Register implements webhook.Server; a path registered twice panics, as on controller-runtime's server.
func (s *Server) Register(path string, h http.Handler) {
	if _, ok := s.Handlers[path]; ok {
		panic("webhook path registered twice: " + path)
	}
	s.Handlers[path] = h
}

// Paths are the registered paths, sorted.
func (s *Server) Paths() []string { return slices.Sorted(maps.Keys(s.Handlers)) }

// Admission is the admission webhook registered on path; the test fails without one.
func (s *Server) Admission(t testing.TB, path string) *webhook.Admission {
	t.Helper()
	h, ok := s.Handlers[path].(*webhook.Admission)
	if !ok {
		t.Fatalf("no admission handler on %s: %v", path, s.Handlers)
	}
	return h
}

// Configurations reads the chart's mutating and validating webhook configurations.
func Configurations(t testing.TB) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, ConfigurationsFile))
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(data, []byte("\n---\n"))
	if len(docs) != 2 {
		t.Fatalf("%s has %d documents, want 2", ConfigurationsFile, len(docs))
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	for i, obj := range []any{mutating, validating} {
		if err := yaml.UnmarshalStrict(docs[i], obj); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
	}
	return mutating, validating
}

// ServicePath is the path a configured webhook calls; it must call the manager's webhook Service.
func ServicePath(t testing.TB, name string, cc admissionregistrationv1.WebhookClientConfig) string {
	t.Helper()
	if cc.Service == nil || cc.Service.Path == nil {
		t.Fatalf("webhook %s has no service path", name)
	}
	if cc.Service.Name != "flotilla-webhook-service" || cc.Service.Namespace != "flotilla-system" {
		t.Errorf("webhook %s points at %s/%s", name, cc.Service.Namespace, cc.Service.Name)
	}
	return *cc.Service.Path
}

// CheckFailsClosed checks a configured webhook that every object of its rules must pass: it calls path for
// wantRules, fails closed, and selects no objects.
func CheckFailsClosed(t testing.TB, name string, cc admissionregistrationv1.WebhookClientConfig, path string,
	rules, wantRules []admissionregistrationv1.RuleWithOperations, policy *admissionregistrationv1.FailurePolicyType, objects *metav1.LabelSelector) {
	t.Helper()
	if got := ServicePath(t, name, cc); got != path {
		t.Errorf("webhook %s path %q, want %q", name, got, path)
	}
	if diff := cmp.Diff(wantRules, rules); diff != "" {
		t.Errorf("webhook %s rules (-want +got):\n%s", name, diff)
	}
	if policy == nil || *policy != admissionregistrationv1.Fail {
		t.Errorf("webhook %s failurePolicy is not Fail", name)
	}
	if objects != nil {
		t.Errorf("webhook %s selects objects (%v): every object needs it", name, objects)
	}
}

// CheckKindWebhooks checks a module's chart entries for one apps.kruise.io/v1alpha1 resource: each webhook
// of paths (webhook name to path) is configured for creates and updates of it, fails closed and selects no
// objects; and the module serves exactly those paths (served, as Server.Paths lists them).
func CheckKindWebhooks(t testing.TB, resource string, paths map[string]string, served []string) {
	t.Helper()
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"apps.kruise.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{resource},
		},
	}}
	mutating, validating := Configurations(t)
	found := map[string]bool{}
	check := func(name string, cc admissionregistrationv1.WebhookClientConfig, got []admissionregistrationv1.RuleWithOperations,
		policy *admissionregistrationv1.FailurePolicyType, objects *metav1.LabelSelector) {
		if path, ok := paths[name]; ok {
			CheckFailsClosed(t, name, cc, path, got, rules, policy, objects)
			found[name] = true
		}
	}
	for _, w := range mutating.Webhooks {
		check(w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.ObjectSelector)
	}
	for _, w := range validating.Webhooks {
		check(w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.ObjectSelector)
	}
	for name := range paths {
		if !found[name] {
			t.Errorf("the chart has no webhook %s", name)
		}
	}
	if diff := cmp.Diff(slices.Sorted(maps.Values(paths)), served); diff != "" {
		t.Errorf("served paths (-configured +served):\n%s", diff)
	}
}

// WithSubResource is req for a subresource.
func WithSubResource(req admission.Request, sub string) admission.Request {
	req.SubResource = sub
	return req
}

// ApplyJSONPatch applies the response's JSON patch to body as the API server does (with the same library, on
// the patch as it goes over the wire), and returns the decoded result.
func ApplyJSONPatch(t testing.TB, body string, resp admission.Response) any {
	t.Helper()
	doc := []byte(body)
	if len(resp.Patches) > 0 {
		ops, err := json.Marshal(resp.Patches)
		if err != nil {
			t.Fatal(err)
		}
		patch, err := jsonpatch.DecodePatch(ops)
		if err != nil {
			t.Fatal(err)
		}
		if doc, err = patch.Apply(doc); err != nil {
			t.Fatalf("applying %s: %v", ops, err)
		}
	}
	var out any
	if err := json.Unmarshal(doc, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// JSONLookup reads a dotted path of object keys and list elements: by index, or "name=x" for the element
// named x.
func JSONLookup(doc any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch n := doc.(type) {
		case map[string]any:
			doc = n[k]
		case []any:
			doc = listElement(n, k)
		default:
			return nil
		}
	}
	return doc
}

func listElement(list []any, key string) any {
	if name, ok := strings.CutPrefix(key, "name="); ok {
		for _, e := range list {
			if m, ok := e.(map[string]any); ok && m["name"] == name {
				return m
			}
		}
		return nil
	}
	i, err := strconv.Atoi(key)
	if err != nil || i < 0 || i >= len(list) {
		return nil
	}
	return list[i]
}

// Request is an admission request for op on the apps.kruise.io/v1alpha1 object body of kind (resource its
// plural), named name in namespace ns; old, when not empty, is the stored object of an update.
func Request(kind, resource, ns, name string, op admissionv1.Operation, body, old string) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req", Namespace: ns, Name: name, Operation: op,
		Kind:     metav1.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: kind},
		Resource: metav1.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: resource},
		Object:   runtime.RawExtension{Raw: []byte(body)},
	}}
	if old != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(old)}
	}
	return req
}
