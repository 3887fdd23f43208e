package podunavailablebudget

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := kruisepolicyv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func testHandler(t *testing.T, refusal error, existing ...client.Object) admission.Handler {
	t.Helper()
	s := testScheme(t)
	reader := fake.NewClientBuilder().WithScheme(s).WithObjects(existing...).Build()
	return handlers(admission.NewDecoder(s), reader, refusal)[ValidatePodUnavailableBudgetPath]
}

func request(op admissionv1.Operation, body, old string) admission.Request {
	req := webhooktest.Request("PodUnavailableBudget", "podunavailablebudgets", "ns", "web-pub", op, body, old)
	req.Kind.Group, req.Resource.Group = kruisepolicyv1alpha1.GroupVersion.Group, kruisepolicyv1alpha1.GroupVersion.Group
	return req
}

// sample is upstream's documented budget: at most one unavailable of the pods labelled app=web.
const sample = `{"apiVersion":"policy.kruise.io/v1alpha1","kind":"PodUnavailableBudget","metadata":{"name":"web-pub","namespace":"ns"},` +
	`"spec":{"selector":{"matchLabels":{"app":"web"}},"maxUnavailable":1}}`

func TestValidatingWebhook(t *testing.T) {
	h := testHandler(t, nil)
	if resp := h.Handle(context.Background(), request(admissionv1.Create, sample, "")); !resp.Allowed {
		t.Errorf("the sample refused: %v", resp.Result)
	}
	both := strings.Replace(sample, `"maxUnavailable":1`, `"maxUnavailable":1,"minAvailable":"50%"`, 1)
	resp := h.Handle(context.Background(), request(admissionv1.Create, both, ""))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(resp.Result.Message, "spec.minAvailable: Forbidden: maxUnavailable and minAvailable are mutually exclusive") {
		t.Errorf("both budgets: allowed=%v %v", resp.Allowed, resp.Result)
	}
	moved := strings.Replace(sample, `"app":"web"`, `"app":"api"`, 1)
	if resp := h.Handle(context.Background(), request(admissionv1.Update, moved, sample)); resp.Allowed ||
		!strings.Contains(resp.Result.Message, "spec.selector: Invalid value") || !strings.Contains(resp.Result.Message, "field is immutable") {
		t.Errorf("a moved selector: allowed=%v %v", resp.Allowed, resp.Result)
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Create, `{"spec":`, "")); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("undecodable body: allowed=%v %v", resp.Allowed, resp.Result)
	}
}

// A second budget over the same pods is refused, naming the first.
func TestValidatingWebhookRefusesConflicts(t *testing.T) {
	one := intstr.FromInt32(1)
	first := &kruisepolicyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: "ns"},
		Spec: kruisepolicyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MaxUnavailable: &one}}
	elsewhere := first.DeepCopy()
	elsewhere.Namespace = "other"
	resp := testHandler(t, nil, first).Handle(context.Background(), request(admissionv1.Create, sample, ""))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "in conflict with PodUnavailableBudget first") {
		t.Errorf("a conflicting budget: allowed=%v %v", resp.Allowed, resp.Result)
	}
	if resp := testHandler(t, nil, elsewhere).Handle(context.Background(), request(admissionv1.Create, sample, "")); !resp.Allowed {
		t.Errorf("a budget of another namespace conflicts: %v", resp.Result)
	}
}

// With both gates off every create and update is refused, as upstream's; deletes pass.
func TestValidatingWebhookGatesOff(t *testing.T) {
	h := testHandler(t, errGatesOff)
	for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
		resp := h.Handle(context.Background(), request(op, sample, sample))
		if resp.Allowed || resp.Result.Code != http.StatusBadRequest || !strings.Contains(resp.Result.Message,
			"feature PodUnavailableBudget is invalid, please open via feature-gate(PodUnavailableBudgetDeleteGate, PodUnavailableBudgetUpdateGate)") {
			t.Errorf("%s with the gates off: allowed=%v %v", op, resp.Allowed, resp.Result)
		}
	}
	if resp := h.Handle(context.Background(), request(admissionv1.Delete, "", sample)); !resp.Allowed {
		t.Errorf("a delete refused: %v", resp.Result)
	}
}

func TestRegisterWebhooks(t *testing.T) {
	srv := webhooktest.NewServer()
	reader := fake.NewClientBuilder().Build()
	if err := RegisterWebhooks(srv, reader, runtime.NewScheme(), nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(srv.Paths(), []string{ValidatePodUnavailableBudgetPath}) {
		t.Errorf("paths %v", srv.Paths())
	}
	if err := RegisterWebhooks(nil, reader, runtime.NewScheme(), nil); err == nil {
		t.Error("no server accepted")
	}
}

// The chart's entry: the served path, creates and updates of podunavailablebudgets, failing closed like upstream.
func TestPodUnavailableBudgetWebhookConfiguration(t *testing.T) {
	_, validating := webhooktest.Configurations(t)
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"policy.kruise.io"}, APIVersions: []string{"v1alpha1"},
			Resources: []string{"podunavailablebudgets"}},
	}}
	for _, w := range validating.Webhooks {
		if w.Name == "vpodunavailablebudget.kb.io" {
			webhooktest.CheckFailsClosed(t, w.Name, w.ClientConfig, ValidatePodUnavailableBudgetPath, w.Rules, rules, w.FailurePolicy, w.ObjectSelector)
			return
		}
	}
	t.Error("the chart has no webhook vpodunavailablebudget.kb.io")
}
