package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	analysisTemplates = schema.GroupVersionResource{Group: "analysis.flotilla.dev", Version: "v1alpha1", Resource: "analysistemplates"}
	analysisRuns      = schema.GroupVersionResource{Group: "analysis.flotilla.dev", Version: "v1alpha1", Resource: "analysisruns"}
)

// ciGate is a CI system's status API the manager asks, on this machine's loopback: each pipeline's state is
// what the story sets.
type ciGate struct {
	mu     sync.Mutex
	states map[string]string
}

func (c *ciGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	state, ok := c.states[strings.TrimPrefix(r.URL.Path, "/pipelines/")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = fmt.Fprintf(w, `{"pipeline":{"state":%q}}`, state)
}

func (c *ciGate) set(pipeline, state string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.states[pipeline] = state
}

// ciTemplate asks the gate for the pipeline argument's state every second until it passed or failed: while it
// runs, the answers are inconclusive and do not count toward count.
func ciTemplate(ns, url string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "analysis.flotilla.dev/v1alpha1", "kind": "AnalysisTemplate",
		"metadata": map[string]any{"name": "ci-gate", "namespace": ns},
		"spec": map[string]any{
			"args": []any{map[string]any{"name": "pipeline"}},
			"metrics": []any{map[string]any{
				"name": "ci", "interval": "1s", "count": int64(1), "inconclusiveLimit": int64(100),
				"successCondition": `result == "passed"`, "failureCondition": `result == "failed"`,
				"provider": map[string]any{"web": map[string]any{
					"url": url + "/pipelines/{{args.pipeline}}", "jsonPath": "{$.pipeline.state}"}},
			}},
		},
	}}
}

func ciRun(ns, name, pipeline string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "analysis.flotilla.dev/v1alpha1", "kind": "AnalysisRun",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"templates": []any{map[string]any{"name": "ci-gate"}},
			"args":      []any{map[string]any{"name": "pipeline", "value": pipeline}},
		},
	}}
}

// runPhase waits for the run's final phase and returns it with its message.
func runPhase(ctx context.Context, ns, name string) (string, string) {
	GinkgoHelper()
	var phase, message string
	Eventually(func(g Gomega) {
		run, err := dyn.Resource(analysisRuns).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		phase, _, _ = unstructured.NestedString(run.Object, "status", "phase")
		message, _, _ = unstructured.NestedString(run.Object, "status", "message")
		g.Expect(phase).To(BeElementOf("Successful", "Failed", "Inconclusive", "Error"))
	}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(poll).Should(Succeed())
	return phase, message
}

// The CI approval pattern with Flotilla's analysis: a run asks a CI system's API for a pipeline's state and
// passes once it passed, fails once it failed; a template whose condition does not compile is refused by the
// webhook the API server calls, naming the field.
var _ = Describe("Metric analysis stories", func() {
	It("gates on a web endpoint and refuses a condition that does not compile", func(ctx SpecContext) {
		ns := newNamespace(ctx, "analysis-")
		gate := &ciGate{states: map[string]string{"41": "running", "42": "running"}}
		srv := httptest.NewServer(gate)
		DeferCleanup(srv.Close)

		By("a condition that does not compile is refused")
		bad := ciTemplate(ns, srv.URL)
		metrics, _, _ := unstructured.NestedSlice(bad.Object, "spec", "metrics")
		metrics[0].(map[string]any)["successCondition"] = "result =="
		Expect(unstructured.SetNestedSlice(bad.Object, metrics, "spec", "metrics")).To(Succeed())
		_, err := dyn.Resource(analysisTemplates).Namespace(ns).Create(ctx, bad, metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring(`spec.metrics[0].successCondition: Invalid value: "result ==": ERROR: <input>:1:10: Syntax error`)))

		By("a passing pipeline passes the gate, a failing one fails it")
		_, err = dyn.Resource(analysisTemplates).Namespace(ns).Create(ctx, ciTemplate(ns, srv.URL), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, name := range []string{"release-41", "release-42"} {
			_, err = dyn.Resource(analysisRuns).Namespace(ns).Create(ctx, ciRun(ns, name, strings.TrimPrefix(name, "release-")), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		time.Sleep(2 * time.Second) // a few inconclusive answers while the pipelines run
		gate.set("41", "passed")
		gate.set("42", "failed")
		phase, message := runPhase(ctx, ns, "release-41")
		Expect(phase).To(Equal("Successful"), message)
		phase, message = runPhase(ctx, ns, "release-42")
		Expect(phase).To(Equal("Failed"))
		Expect(message).To(Equal(`metric "ci": 1 of 1 measurements failed, more than failureLimit 0`))
		rows := kubectlGet(ctx, ns, "analysisrun", "release-41")
		Expect(strings.Fields(rows[0])).To(Equal([]string{"NAME", "PHASE", "MESSAGE", "AGE"}))
		Expect(strings.Fields(rows[1])[:4]).To(Equal([]string{"release-41", "Successful", "every", "metric"}))
	})
})
