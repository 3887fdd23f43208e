package analysis

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
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
)

func testHandlers(t *testing.T) map[string]admission.Handler {
	t.Helper()
	s := runtime.NewScheme()
	if err := analysisv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return handlers(admission.NewDecoder(s))
}

func request(kind, resource string, op admissionv1.Operation, body, old string) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req", Namespace: "shop", Name: "canary", Operation: op,
		Kind:     metav1.GroupVersionKind{Group: "analysis.flotilla.dev", Version: "v1alpha1", Kind: kind},
		Resource: metav1.GroupVersionResource{Group: "analysis.flotilla.dev", Version: "v1alpha1", Resource: resource},
		Object:   runtime.RawExtension{Raw: []byte(body)},
	}}
	if old != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(old)}
	}
	return req
}

const template = `{"apiVersion":"analysis.flotilla.dev/v1alpha1","kind":"AnalysisTemplate","metadata":{"name":"error-rate"},` +
	`"spec":{"args":[{"name":"service"}],"metrics":[{"name":"error-rate","interval":"30s","failureLimit":1,` +
	`"successCondition":"result < 0.05","provider":{"prometheus":{"address":"http://prometheus:9090",` +
	`"query":"sum(rate(errors{service=\"{{args.service}}\"}[1m]))"}}}]}}`

const run = `{"apiVersion":"analysis.flotilla.dev/v1alpha1","kind":"AnalysisRun","metadata":{"name":"canary","namespace":"shop"},` +
	`"spec":{"templates":[{"name":"error-rate"}],"args":[{"name":"service","value":"checkout"}]}}`

func TestValidatingWebhooks(t *testing.T) {
	h := testHandlers(t)
	ctx := context.Background()
	tmpl := h[ValidateAnalysisTemplatePath]
	if resp := tmpl.Handle(ctx, request("AnalysisTemplate", "analysistemplates", admissionv1.Create, template, "")); !resp.Allowed {
		t.Errorf("a valid template refused: %v", resp.Result)
	}
	bad := strings.Replace(template, "result < 0.05", "result <", 1)
	resp := tmpl.Handle(ctx, request("AnalysisTemplate", "analysistemplates", admissionv1.Create, bad, ""))
	if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(resp.Result.Message, `spec.metrics[0].successCondition: Invalid value: "result <": ERROR: <input>:1:9: Syntax error`) {
		t.Errorf("a bad condition: allowed=%v %v", resp.Allowed, resp.Result)
	}
	cluster := strings.Replace(template, `"kind":"AnalysisTemplate"`, `"kind":"ClusterAnalysisTemplate"`, 1)
	clusterBad := strings.Replace(cluster, `"args":[{"name":"service"}],`, "", 1)
	resp = h[ValidateClusterAnalysisTemplatePath].Handle(ctx, request("ClusterAnalysisTemplate", "clusteranalysistemplates", admissionv1.Create, clusterBad, ""))
	if resp.Allowed || !strings.Contains(resp.Result.Message, `refers to argument "service", which is not declared in args`) {
		t.Errorf("an undeclared argument: allowed=%v %v", resp.Allowed, resp.Result)
	}
	runs := h[ValidateAnalysisRunPath]
	if resp := runs.Handle(ctx, request("AnalysisRun", "analysisruns", admissionv1.Create, run, "")); !resp.Allowed {
		t.Errorf("a valid run refused: %v", resp.Result)
	}
	terminated := strings.Replace(run, `"spec":{`, `"spec":{"terminate":true,`, 1)
	if resp := runs.Handle(ctx, request("AnalysisRun", "analysisruns", admissionv1.Update, terminated, run)); !resp.Allowed {
		t.Errorf("terminate refused: %v", resp.Result)
	}
	changed := strings.Replace(run, "checkout", "payments", 1)
	resp = runs.Handle(ctx, request("AnalysisRun", "analysisruns", admissionv1.Update, changed, run))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "spec: Forbidden: an AnalysisRun's spec may not change but for terminate") {
		t.Errorf("a changed spec: allowed=%v %v", resp.Allowed, resp.Result)
	}
	if resp := runs.Handle(ctx, request("AnalysisRun", "analysisruns", admissionv1.Create, `{"spec":`, "")); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("undecodable body: allowed=%v %v", resp.Allowed, resp.Result)
	}
	// The status writes of the controller are a subresource: never validated.
	if resp := runs.Handle(ctx, webhooktest.WithSubResource(request("AnalysisRun", "analysisruns", admissionv1.Update, changed, run), "status")); !resp.Allowed {
		t.Errorf("a status write refused: %v", resp.Result)
	}
}

func TestRegisterWebhooks(t *testing.T) {
	srv := webhooktest.NewServer()
	if err := RegisterWebhooks(srv, runtime.NewScheme()); err != nil {
		t.Fatal(err)
	}
	want := []string{ValidateAnalysisRunPath, ValidateAnalysisTemplatePath, ValidateClusterAnalysisTemplatePath}
	if !slices.Equal(srv.Paths(), want) {
		t.Errorf("paths %v", srv.Paths())
	}
	if err := RegisterWebhooks(nil, nil); err == nil {
		t.Error("no server accepted")
	}
}

// The chart's entries: each served path, for creates and updates of its resource, failing closed and
// selecting every object.
func TestAnalysisWebhookConfiguration(t *testing.T) {
	_, validating := webhooktest.Configurations(t)
	want := map[string][2]string{
		"vanalysistemplate.analysis.flotilla.dev":        {ValidateAnalysisTemplatePath, "analysistemplates"},
		"vclusteranalysistemplate.analysis.flotilla.dev": {ValidateClusterAnalysisTemplatePath, "clusteranalysistemplates"},
		"vanalysisrun.analysis.flotilla.dev":             {ValidateAnalysisRunPath, "analysisruns"},
	}
	found := 0
	for _, w := range validating.Webhooks {
		entry, ok := want[w.Name]
		if !ok {
			continue
		}
		found++
		rules := []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"analysis.flotilla.dev"}, APIVersions: []string{"v1alpha1"},
				Resources: []string{entry[1]}},
		}}
		webhooktest.CheckFailsClosed(t, w.Name, w.ClientConfig, entry[0], w.Rules, rules, w.FailurePolicy, w.ObjectSelector)
	}
	if found != len(want) {
		t.Errorf("the chart has %d of the %d analysis webhooks", found, len(want))
	}
}
