package deletionprotection

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	dpadmission "github.com/flotilla-dev/flotilla/workloads/deletionprotection/admission"
)

// counts is a Counter that knows the answers: pods and claims by namespace, custom resources by resource.
type counts struct {
	pods, claims map[string]int
	crs          map[schema.GroupVersionResource]int
	err          error
}

func (c counts) ActivePods(_ context.Context, ns string) (int, error)  { return c.pods[ns], c.err }
func (c counts) BoundClaims(_ context.Context, ns string) (int, error) { return c.claims[ns], c.err }
func (c counts) CustomResources(_ context.Context, gvr schema.GroupVersionResource) (int, error) {
	return c.crs[gvr], c.err
}

var (
	on         = dpadmission.Options{Enabled: true, CRDCascading: true}
	widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}
	stubbed    = counts{pods: map[string]int{"ns-1": 3}, claims: map[string]int{"ns-2": 1}, crs: map[schema.GroupVersionResource]int{widgetsGVR: 4}}
)

func handler(t *testing.T, c Counter, o dpadmission.Options, path string) admission.Handler {
	t.Helper()
	h, ok := handlers(c, o)[path]
	if !ok {
		t.Fatalf("no handler on %s", path)
	}
	return h
}

// request is an admission request of op on a group/version kind; body is the object (creates and updates),
// old the stored one (updates and deletes).
func request(op admissionv1.Operation, gvk schema.GroupVersionKind, body, old string) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req", Operation: op, Kind: metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		UserInfo: authenticationv1.UserInfo{Username: "alice"},
	}}
	if body != "" {
		req.Object = runtime.RawExtension{Raw: []byte(body)}
	}
	if old != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(old)}
	}
	return req
}

var (
	namespaceKind  = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	deploymentKind = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	cloneSetKind   = schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"}
	serviceKind    = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	crdKind        = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
)

func namespaceJSON(name, value string) string {
	return `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `","labels":{"policy.kruise.io/delete-protection":"` + value + `"}}}`
}

func workloadJSON(kind, value string, replicas string) string {
	return `{"kind":"` + kind + `","metadata":{"name":"web","namespace":"default","labels":{"policy.kruise.io/delete-protection":"` + value +
		`"}},"spec":{"replicas":` + replicas + `,"template":{}}}`
}

const widgetsCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",` +
	`"metadata":{"name":"widgets.example.com","labels":{"policy.kruise.io/delete-protection":"Cascading"}},` +
	`"spec":{"group":"example.com","names":{"plural":"widgets","kind":"Widget"},"scope":"Namespaced",` +
	`"versions":[{"name":"v1","served":true,"storage":false},{"name":"v2","served":true,"storage":true}]}}`

func TestDeletionWebhook(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		req      admission.Request
		counter  Counter
		opts     dpadmission.Options
		wantCode int32 // 0 allows
		want     string
	}{
		{name: "Cascading namespace with pods", path: ValidateNamespacePath, counter: stubbed, opts: on,
			req:      request(admissionv1.Delete, namespaceKind, "", namespaceJSON("ns-1", "Cascading")),
			wantCode: http.StatusForbidden,
			want:     "forbidden by ResourcesDeletionProtection: namespace ns-1 has 3 active pods, label policy.kruise.io/delete-protection=Cascading"},
		{name: "Cascading namespace with a claim", path: ValidateNamespacePath, counter: stubbed, opts: on,
			req:      request(admissionv1.Delete, namespaceKind, "", namespaceJSON("ns-2", "Cascading")),
			wantCode: http.StatusForbidden,
			want:     "namespace ns-2 has 1 Bound PersistentVolumeClaim, label policy.kruise.io/delete-protection=Cascading"},
		{name: "empty Cascading namespace", path: ValidateNamespacePath, counter: stubbed, opts: on,
			req: request(admissionv1.Delete, namespaceKind, "", namespaceJSON("ns-3", "Cascading"))},
		{name: "a namespace whose pods cannot be listed", path: ValidateNamespacePath, opts: on,
			counter:  counts{err: errors.New("pods is forbidden")},
			req:      request(admissionv1.Delete, namespaceKind, "", namespaceJSON("ns-1", "Cascading")),
			wantCode: http.StatusInternalServerError,
			want:     "forbidden by ResourcesDeletionProtection: namespace ns-1 could not be checked, label policy.kruise.io/delete-protection=Cascading: pods is forbidden"},
		{name: "gate off", path: ValidateNamespacePath, counter: stubbed,
			req: request(admissionv1.Delete, namespaceKind, "", namespaceJSON("ns-1", "Always"))},
		{name: "Always Deployment", path: ValidateDeploymentPath, counter: stubbed, opts: on,
			req:      request(admissionv1.Delete, deploymentKind, "", workloadJSON("Deployment", "Always", "0")),
			wantCode: http.StatusForbidden,
			want:     "forbidden by ResourcesDeletionProtection: deployment default/web is protected, label policy.kruise.io/delete-protection=Always"},
		{name: "Cascading CloneSet with replicas", path: ValidateKruiseWorkloadPath, counter: stubbed, opts: on,
			req:      request(admissionv1.Delete, cloneSetKind, "", workloadJSON("CloneSet", "Cascading", "2")),
			wantCode: http.StatusForbidden, want: "cloneset default/web has 2 replicas"},
		{name: "Cascading CloneSet scaled to 0", path: ValidateKruiseWorkloadPath, counter: stubbed, opts: on,
			req: request(admissionv1.Delete, cloneSetKind, "", workloadJSON("CloneSet", "Cascading", "0"))},
		{name: "Cascading Service", path: ValidateServicePath, counter: stubbed, opts: on,
			req: request(admissionv1.Delete, serviceKind, "", workloadJSON("Service", "Cascading", "null"))},
		{name: "Cascading CRD lists its storage version", path: ValidateCRDPath, counter: stubbed, opts: on,
			req:      request(admissionv1.Delete, crdKind, "", widgetsCRD),
			wantCode: http.StatusForbidden,
			want:     "customresourcedefinition widgets.example.com has 4 custom resources, label policy.kruise.io/delete-protection=Cascading"},
		{name: "a create reaching a deletion path", path: ValidateNamespacePath, counter: stubbed, opts: on,
			req: request(admissionv1.Create, namespaceKind, namespaceJSON("ns-1", "Always"), "")},
		{name: "a subresource", path: ValidateDeploymentPath, counter: stubbed, opts: on,
			req: webhooktest.WithSubResource(request(admissionv1.Delete, deploymentKind, "", workloadJSON("Deployment", "Always", "1")), "status")},
		{name: "no stored object", path: ValidateDeploymentPath, counter: stubbed, opts: on,
			req: request(admissionv1.Delete, deploymentKind, "", "")},
		{name: "an undecodable object", path: ValidateDeploymentPath, counter: stubbed, opts: on,
			req: request(admissionv1.Delete, deploymentKind, "", `{"metadata":`), wantCode: http.StatusBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := handler(t, tc.counter, tc.opts, tc.path).Handle(context.Background(), tc.req)
			if tc.wantCode == 0 {
				if !resp.Allowed {
					t.Fatalf("refused: %v", resp.Result)
				}
				return
			}
			if resp.Allowed || resp.Result.Code != tc.wantCode || !strings.Contains(resp.Result.Message, tc.want) {
				t.Fatalf("allowed=%v %v, want %d %q", resp.Allowed, resp.Result, tc.wantCode, tc.want)
			}
		})
	}
}

// A refusal is counted by kind and protection.
func TestDeletionRefusalsCounted(t *testing.T) {
	labels := map[string]string{"kind": "Deployment", "protection": "Always"}
	before := managertest.Counter(t, RefusalsName, labels)
	h := handler(t, stubbed, on, ValidateDeploymentPath)
	h.Handle(context.Background(), request(admissionv1.Delete, deploymentKind, "", workloadJSON("Deployment", "Always", "1")))
	if got := managertest.Counter(t, RefusalsName, labels); got != before+1 {
		t.Errorf("refusals %v, want %v", got, before+1)
	}
}

func TestListVersion(t *testing.T) {
	v := func(name string, served, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: storage}
	}
	tests := []struct {
		versions []apiextensionsv1.CustomResourceDefinitionVersion
		want     string
	}{
		{[]apiextensionsv1.CustomResourceDefinitionVersion{v("v1", true, false), v("v2", true, true)}, "v2"},
		{[]apiextensionsv1.CustomResourceDefinitionVersion{v("v1", false, false), v("v2", true, false), v("v3", false, true)}, "v2"},
		{[]apiextensionsv1.CustomResourceDefinitionVersion{v("v1", false, true)}, ""},
	}
	for _, tc := range tests {
		if got := listVersion(tc.versions); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.versions, got, tc.want)
		}
	}
}

func TestLabelWebhook(t *testing.T) {
	h := handler(t, stubbed, on, ValidateLabelPath)
	typo := request(admissionv1.Create, deploymentKind, workloadJSON("Deployment", "always", "1"), "")
	resp := h.Handle(context.Background(), typo)
	want := `metadata.labels[policy.kruise.io/delete-protection]: Unsupported value: "always": supported values: "Always", "Cascading"`
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Message != want {
		t.Errorf("a typo: allowed=%v %v", resp.Allowed, resp.Result)
	}
	service := request(admissionv1.Update, serviceKind, workloadJSON("Service", "Cascading", "null"), workloadJSON("Service", "Always", "null"))
	if resp := h.Handle(context.Background(), service); resp.Allowed || !strings.Contains(resp.Result.Message, `"Cascading": supported values: "Always"`) {
		t.Errorf("a Service set to Cascading: allowed=%v %v", resp.Allowed, resp.Result)
	}
	kept := request(admissionv1.Update, namespaceKind, namespaceJSON("ns-1", "yes"), namespaceJSON("ns-1", "yes"))
	if resp := h.Handle(context.Background(), kept); !resp.Allowed {
		t.Errorf("an update keeping a value set before: %v", resp.Result)
	}
	if resp := handler(t, stubbed, dpadmission.Options{}, ValidateLabelPath).Handle(context.Background(), typo); !resp.Allowed {
		t.Errorf("a typo with the gate off: %v", resp.Result)
	}
	deletion := request(admissionv1.Delete, deploymentKind, "", workloadJSON("Deployment", "always", "1"))
	if resp := h.Handle(context.Background(), deletion); !resp.Allowed {
		t.Errorf("a delete reaching the label path: %v", resp.Result)
	}
}

func TestRegisterWebhooks(t *testing.T) {
	srv := webhooktest.NewServer()
	if err := RegisterWebhooks(srv, stubbed, on); err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(append(slices.Clone(DeletionPaths), ValidateLabelPath)))
	if diff := cmp.Diff(want, srv.Paths()); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if err := RegisterWebhooks(srv, nil, on); err == nil {
		t.Error("no counter accepted")
	}
}

var protectionSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
	Key: "policy.kruise.io/delete-protection", Operator: metav1.LabelSelectorOpExists,
}}}

// The chart's entries: each deletion webhook calls its path for deletions of its kinds only, of labelled
// objects only, failing closed as upstream's; the label webhook judges creates and updates of every protected
// kind; the module serves exactly the configured paths.
func TestWebhookConfiguration(t *testing.T) {
	_, validating := webhooktest.Configurations(t)
	want := map[string]struct {
		path      string
		resources []string
	}{
		"vnamespace.kb.io":                {ValidateNamespacePath, []string{"/namespaces"}},
		"vservice.kb.io":                  {ValidateServicePath, []string{"/services"}},
		"vingress.kb.io":                  {ValidateIngressPath, []string{"networking.k8s.io/ingresses"}},
		"vcustomresourcedefinition.kb.io": {ValidateCRDPath, []string{"apiextensions.k8s.io/customresourcedefinitions"}},
		"vbuiltindeployment.kb.io":        {ValidateDeploymentPath, []string{"apps/deployments"}},
		"vbuiltinreplicaset.kb.io":        {ValidateReplicaSetPath, []string{"apps/replicasets"}},
		"vbuiltinstatefulset.kb.io":       {ValidateStatefulSetPath, []string{"apps/statefulsets"}},
		"vworkloaddeletion.kb.io": {ValidateKruiseWorkloadPath,
			[]string{"apps.kruise.io/clonesets", "apps.kruise.io/statefulsets", "apps.kruise.io/uniteddeployments"}},
		"vdeleteprotectionlabel.kb.io": {ValidateLabelPath, []string{"/namespaces", "/services", "networking.k8s.io/ingresses",
			"apiextensions.k8s.io/customresourcedefinitions", "apps/deployments", "apps/replicasets", "apps/statefulsets",
			"apps.kruise.io/clonesets", "apps.kruise.io/statefulsets", "apps.kruise.io/uniteddeployments"}},
	}
	var configured []string
	for _, w := range validating.Webhooks {
		entry, ok := want[w.Name]
		if !ok {
			continue
		}
		delete(want, w.Name)
		configured = append(configured, webhooktest.ServicePath(t, w.Name, w.ClientConfig))
		if webhooktest.ServicePath(t, w.Name, w.ClientConfig) != entry.path {
			t.Errorf("webhook %s calls %s, want %s", w.Name, *w.ClientConfig.Service.Path, entry.path)
		}
		ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}
		if w.Name == "vdeleteprotectionlabel.kb.io" {
			ops = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
		}
		if diff := cmp.Diff(entry.resources, ruleResources(t, w.Name, w.Rules, ops)); diff != "" {
			t.Errorf("webhook %s resources (-want +got):\n%s", w.Name, diff)
		}
		if diff := cmp.Diff(protectionSelector, w.ObjectSelector); diff != "" {
			t.Errorf("webhook %s objectSelector (-want +got):\n%s", w.Name, diff)
		}
		if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Fail {
			t.Errorf("webhook %s does not fail closed", w.Name)
		}
	}
	for name := range want {
		t.Errorf("the chart has no webhook %s", name)
	}
	srv := webhooktest.NewServer()
	if err := RegisterWebhooks(srv, stubbed, on); err != nil {
		t.Fatal(err)
	}
	slices.Sort(configured)
	if diff := cmp.Diff(srv.Paths(), configured); diff != "" {
		t.Errorf("served (-) and configured (+) paths differ:\n%s", diff)
	}
}

// ruleResources lists group/resource of every rule, each of which must name exactly ops.
func ruleResources(t *testing.T, name string, rules []admissionregistrationv1.RuleWithOperations,
	ops []admissionregistrationv1.OperationType) []string {
	t.Helper()
	var out []string
	for _, r := range rules {
		if !slices.Equal(r.Operations, ops) {
			t.Errorf("webhook %s rule %v operations %v, want %v", name, r.Resources, r.Operations, ops)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				out = append(out, g+"/"+res)
			}
		}
	}
	return out
}
