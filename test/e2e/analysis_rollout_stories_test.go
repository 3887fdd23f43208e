package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var rolloutAnalyses = schema.GroupVersionResource{Group: "analysis.flotilla.dev", Version: "v1alpha1", Resource: "rolloutanalyses"}

// canaryHealth is an APM's view of the canary the test drives: "ok", or "errors" for an error spike.
type canaryHealth struct {
	mu    sync.Mutex
	state string
}

func (h *canaryHealth) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, _ = fmt.Fprintf(w, `{"canary":{"health":%q}}`, h.state)
}

func (h *canaryHealth) set(state string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.state = state
}

const healthTemplate = `
apiVersion: analysis.flotilla.dev/v1alpha1
kind: AnalysisTemplate
metadata: {name: canary-health}
spec:
  args: [{name: canary-revision}]
  metrics:
  - name: health
    interval: 1s
    count: 2
    successCondition: result == "ok"
    failureCondition: result == "errors"
    provider:
      web: {url: "%s/canary?revision={{args.canary-revision}}", jsonPath: "{$.canary.health}"}`

const gateSteps = `
apiVersion: analysis.flotilla.dev/v1alpha1
kind: RolloutAnalysis
metadata: {name: app}
spec:
  rolloutRef: {name: app}
  steps:
  - {step: 1, templates: [{name: canary-health}]}
  - {step: 2, templates: [{name: canary-health}]}`

const deadlineBinding = `
apiVersion: analysis.flotilla.dev/v1alpha1
kind: RolloutAnalysis
metadata: {name: app}
spec:
  rolloutRef: {name: app}
  progressDeadlineSeconds: 5
  abortOnProgressDeadline: true`

// analysisRunPhases are the phases of the namespace's AnalysisRuns by name.
func analysisRunPhases(ctx context.Context, ns string) map[string]string {
	GinkgoHelper()
	list, err := dyn.Resource(analysisRuns).Namespace(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, run := range list.Items {
		out[run.GetName()], _, _ = unstructured.NestedString(run.Object, "status", "phase")
	}
	return out
}

var _ = Describe("Rollouts gated by metric analysis", Ordered, func() {
	var bin string

	BeforeAll(func(ctx SpecContext) {
		bin = binaryOf(ctx, "./rollout/cmd/kubectl-kruise", "kubectl-kruise")
	}, NodeTimeout(3*time.Minute))

	It("passes step 1, aborts on an error spike at step 2, and completes after a retry", func(ctx SpecContext) {
		health := &canaryHealth{state: "ok"}
		srv := httptest.NewServer(health)
		DeferCleanup(srv.Close)
		s := newStory(ctx, "Deployment", 4)
		s.createYAML(ctx, appService, appIngress, fmt.Sprintf(healthTemplate, srv.URL), gateSteps)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, `canary:
  steps:
  - {replicas: 1, traffic: 20%}
  - {replicas: 2, traffic: 50%}
  - {replicas: 100%}
  trafficRoutings:
  - {service: app, gracePeriodSeconds: 0, ingress: {name: app}}`)
		world := trafficWorld{ns: s.ns}
		s.setVersion(ctx, "v2")

		By("step 1 waits for its analysis, which passes, then for approval")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		Expect(analysisRunPhases(ctx, s.ns)).To(ContainElement("Successful"))
		Expect(world.canaryAnnotations(ctx, "app")).To(HaveKeyWithValue("canary-weight", "20"))
		out, code := kruise(ctx, bin, s.ns, "rollout", "status", "rollout/app", "--watch=false")
		Expect(code).To(Equal(3), "%s", out)
		Expect(out).To(MatchRegexp(`Analysis: app \(step 1 app-\S+-0-1 Successful\)`))

		By("an error spike at step 2 aborts the release: traffic back to stable, then the canary pods go")
		health.set("errors")
		s.approve(ctx)
		Eventually(func() string { return s.condition(ctx, "Stalled") }).WithContext(ctx).WithTimeout(2 * time.Minute).
			WithPolling(poll).Should(HavePrefix("True/AnalysisFailed: release aborted: analysis of step 2"))
		Eventually(func() map[string]string { return world.canaryAnnotations(ctx, "app") }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(poll).Should(Or(HaveKeyWithValue("gone", "true"), HaveKeyWithValue("canary-weight", "0")),
			"no traffic to the canary")
		s.waitPods(ctx, map[string]int{"v1": 4})
		Expect(s.step(ctx)).To(Equal("Progressing 2/StepPaused"))
		out, code = kruise(ctx, bin, s.ns, "rollout", "status", "rollout/app", "--watch=false")
		Expect(code).To(Equal(2), "a stalled release fails CI:\n%s", out)

		By("a retry once the spike is over releases again from step 1 and completes")
		health.set("ok")
		out, code = kruise(ctx, bin, s.ns, "rollout", "retry", "rollout/app")
		Expect(code).To(Equal(0), "%s", out)
		Expect(out).To(ContainSubstring("rollout.rollouts.kruise.io/app retried (RolloutAnalysis app)"))
		s.waitStep(ctx, "Progressing 1/StepPaused")
		Expect(s.condition(ctx, "Stalled")).To(BeEmpty())
		s.approve(ctx)
		s.waitStep(ctx, "Progressing 2/StepPaused")
		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 4})
		world.expectNoCanary(ctx, "app", "app")

		By("every run is on record: the first attempt's two, the second's two")
		phases := analysisRunPhases(ctx, s.ns)
		Expect(phases).To(HaveLen(4))
		Expect(phases).To(ContainElements("Successful", "Failed"))
	})

	It("aborts a step whose pods cannot be scheduled past its progress deadline, naming them", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.createYAML(ctx, deadlineBinding)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  enableExtraWorkloadForCanary: true\n  steps:\n  - replicas: 1\n  - replicas: 100%")

		By("v2 asks for a node no one has: its canary pod stays Pending")
		nowhere := `{"spec":{"template":{"spec":{"nodeSelector":{"flotilla.dev/nowhere":"true"},` +
			`"containers":[{"name":"app","env":[{"name":"VERSION","value":"v2"}]}]}}}}`
		_, err := kube.AppsV1().Deployments(s.ns).Patch(ctx, appName, types.StrategicMergePatchType, []byte(nowhere), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string { return s.condition(ctx, "Stalled") }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(And(
			HavePrefix("True/ProgressDeadlineExceeded: release aborted: the pods of step(1) did not become ready within progressDeadlineSeconds (5s): app-"),
			ContainSubstring("(Unschedulable: ")))
		s.waitPods(ctx, map[string]int{"v1": 4})

		By("a fixed revision is released")
		fixed := `{"spec":{"template":{"spec":{"nodeSelector":null,"containers":[{"name":"app","env":[{"name":"VERSION","value":"v3"}]}]}}}}`
		_, err = kube.AppsV1().Deployments(s.ns).Patch(ctx, appName, types.StrategicMergePatchType, []byte(fixed), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		s.waitPods(ctx, map[string]int{"v1": 4, "v3": 1})
		s.waitStep(ctx, "Progressing 1/StepPaused")
		Expect(s.condition(ctx, "Stalled")).To(BeEmpty())
		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v3": 4})
	})

	It("scales a canary Deployment to zero on abort, and releases once the binding is gone", func(ctx SpecContext) {
		health := &canaryHealth{state: "errors"}
		srv := httptest.NewServer(health)
		DeferCleanup(srv.Close)
		s := newStory(ctx, "Deployment", 4)
		s.createYAML(ctx, fmt.Sprintf(healthTemplate, srv.URL), gateSteps)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  enableExtraWorkloadForCanary: true\n  steps:\n  - replicas: 2\n  - replicas: 100%")
		s.setVersion(ctx, "v2")

		By("step 1's run fails: the canary Deployment is scaled to zero")
		Eventually(func() string { return s.condition(ctx, "Stalled") }).WithContext(ctx).WithTimeout(2 * time.Minute).
			WithPolling(poll).Should(HavePrefix("True/AnalysisFailed: release aborted: analysis of step 1"))
		s.waitPods(ctx, map[string]int{"v1": 4})
		Expect(s.step(ctx)).To(Equal("Progressing 1/StepPaused"))

		By("without its RolloutAnalysis the release starts again and completes")
		Expect(dyn.Resource(rolloutAnalyses).Namespace(s.ns).Delete(ctx, appName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() string { return s.condition(ctx, "Stalled") }).WithContext(ctx).WithTimeout(time.Minute).
			WithPolling(poll).Should(BeEmpty())
		s.waitPods(ctx, map[string]int{"v1": 4, "v2": 2})
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 4})
	})

	DescribeTable("takes a partition-style workload's new pods back to the stable revision on abort",
		func(ctx SpecContext, kind string) {
			health := &canaryHealth{state: "errors"}
			srv := httptest.NewServer(health)
			DeferCleanup(srv.Close)
			s := newStory(ctx, kind, 4)
			s.createYAML(ctx, fmt.Sprintf(healthTemplate, srv.URL), gateSteps)
			s.waitPods(ctx, map[string]int{"v1": 4})
			s.rollout(ctx, "canary:\n  steps:\n  - replicas: 2\n  - replicas: 100%")
			Expect(s.argoHealthOf(ctx)).To(Equal("Healthy: Rollout is Completed"))
			s.setVersion(ctx, "v2")

			By("step 1's run fails: the two new pods are replaced by stable ones, and Argo CD's override says Degraded")
			Eventually(func() string { return s.condition(ctx, "Stalled") }).WithContext(ctx).WithTimeout(2 * time.Minute).
				WithPolling(poll).Should(HavePrefix("True/AnalysisFailed: release aborted: analysis of step 1"))
			s.waitPods(ctx, map[string]int{"v1": 4})
			Expect(s.step(ctx)).To(Equal("Progressing 1/StepPaused"))
			Expect(s.argoHealthOf(ctx)).To(HavePrefix("Degraded: release aborted: analysis of step 1"))

			By("a retry once the canary is healthy releases it again")
			health.set("ok")
			out, code := kruise(ctx, bin, s.ns, "rollout", "retry", "rollout/app")
			Expect(code).To(Equal(0), "%s", out)
			s.waitPods(ctx, map[string]int{"v1": 2, "v2": 2})
			s.waitStep(ctx, "Progressing 1/StepPaused")
			Expect(s.argoHealthOf(ctx)).To(Equal("Suspended: Rollout is Paused need manual intervention"))
			s.approve(ctx)
			s.waitPhase(ctx, "Healthy")
			s.waitPods(ctx, map[string]int{"v2": 4})
		},
		Entry("a CloneSet", "CloneSet"),
		Entry("a StatefulSet", "StatefulSet"),
	)
})

// measurementIndices are the indices of the measurements the first metric of an AnalysisRun recorded.
func measurementIndices(run *unstructured.Unstructured) []int64 {
	results, _, _ := unstructured.NestedSlice(run.Object, "status", "metricResults")
	var out []int64
	if len(results) == 0 {
		return out
	}
	measurements, _, _ := unstructured.NestedSlice(results[0].(map[string]any), "measurements")
	for _, m := range measurements {
		i, _, _ := unstructured.NestedInt64(m.(map[string]any), "index")
		out = append(out, i)
	}
	return out
}

// stepRun is the only AnalysisRun of the namespace, once it exists.
func stepRun(ctx context.Context, ns string) *unstructured.Unstructured {
	GinkgoHelper()
	var run *unstructured.Unstructured
	Eventually(func(g Gomega) {
		list, err := dyn.Resource(analysisRuns).Namespace(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(list.Items).To(HaveLen(1))
		run = &list.Items[0]
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
	return run
}

// This spec replaces the suite's manager mid-analysis and leaves the new one for the specs after it.
var _ = Describe("Metric analysis across a manager restart", Serial, Ordered, func() {
	It("resumes a run the manager was measuring, losing and repeating no measurement", func(ctx SpecContext) {
		health := &canaryHealth{state: "ok"}
		srv := httptest.NewServer(health)
		DeferCleanup(srv.Close)
		s := newStory(ctx, "Deployment", 2)
		slow := strings.Replace(fmt.Sprintf(healthTemplate, srv.URL), "count: 2", "count: 8", 1)
		s.createYAML(ctx, slow, gateSteps)
		s.waitPods(ctx, map[string]int{"v1": 2})
		s.rollout(ctx, "canary:\n  enableExtraWorkloadForCanary: true\n  steps:\n  - replicas: 1\n  - replicas: 100%")
		s.setVersion(ctx, "v2")

		By("the manager is killed (SIGKILL, as a crash) while step 1's run has measured some of its eight")
		Eventually(func() []int64 { return measurementIndices(stepRun(ctx, s.ns)) }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(poll).Should(WithTransform(func(i []int64) int { return len(i) }, BeNumerically(">=", 2)))
		binary := manager.Binary
		manager.Kill()
		workDir, err := os.MkdirTemp("", "flotilla-e2e-")
		failOnError(err, "creating the work directory")
		laterWorkDirs = append(laterWorkDirs, workDir)
		manager, err = startManager(ctx, workDir, binary)
		failOnError(err, "restarting the suite's manager")

		By("a new manager finishes the same run: measurements 1 to 8, once each, and the release goes on")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		run := stepRun(ctx, s.ns)
		phase, _, _ := unstructured.NestedString(run.Object, "status", "phase")
		Expect(phase).To(Equal("Successful"))
		Expect(measurementIndices(run)).To(Equal([]int64{1, 2, 3, 4, 5, 6, 7, 8}))
		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 2})
	})
})
