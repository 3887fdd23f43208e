package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var httpRoutes = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}

// createYAML creates the objects of a multi-document YAML in the story's namespace.
func (s *story) createYAML(ctx context.Context, docs ...string) {
	GinkgoHelper()
	for _, doc := range docs {
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
		_, err := applyAndCleanUp(ctx, inNamespace(obj, s.ns))
		Expect(err).NotTo(HaveOccurred())
	}
}

const appService = `
apiVersion: v1
kind: Service
metadata: {name: app}
spec:
  selector: {app: app}
  ports: [{port: 80, targetPort: 8080}]`

const appIngress = `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: app}
spec:
  ingressClassName: nginx
  rules:
  - host: app.example
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}`

const appRoute = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app}
spec:
  parentRefs: [{name: gateway}]
  hostnames: [app.example]
  rules:
  - matches: [{path: {type: PathPrefix, value: /}}]
    backendRefs: [{kind: Service, name: app, port: 80}]`

// route reads the story's HTTPRoute rules as "backend:weight" lists and the canary rules' header matches.
func (s *story) route(ctx context.Context) (backends []string, canaryHeaders []string) {
	GinkgoHelper()
	obj, err := dyn.Resource(httpRoutes).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "rules")
	for _, r := range rules {
		rule := r.(map[string]any)
		refs, _, _ := unstructured.NestedSlice(rule, "backendRefs")
		for _, ref := range refs {
			m := ref.(map[string]any)
			backends = append(backends, fmt.Sprintf("%v:%v", m["name"], m["weight"]))
		}
		if len(refs) == 1 && refs[0].(map[string]any)["name"] == appName+"-canary" {
			matches, _, _ := unstructured.NestedSlice(rule, "matches")
			for _, m := range matches {
				headers, _, _ := unstructured.NestedSlice(m.(map[string]any), "headers")
				for _, h := range headers {
					hm := h.(map[string]any)
					canaryHeaders = append(canaryHeaders, fmt.Sprintf("%v=%v", hm["name"], hm["value"]))
				}
			}
		}
	}
	return backends, canaryHeaders
}

var _ = Describe("Traffic routing stories", func() {
	It("shifts HTTPRoute weights and adds a header rule for the canary (Gateway API)", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.createYAML(ctx, appService, appRoute)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, `canary:
  steps:
  - replicas: 1
    traffic: 20%
  - replicas: 2
    traffic: 50%
    matches:
    - headers: [{type: Exact, name: x-canary, value: "yes"}]
  - replicas: 100%
  trafficRoutings:
  - service: app
    gracePeriodSeconds: 0
    gateway: {httpRouteName: app}`)
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		backends, headers := s.route(ctx)
		Expect(backends).To(Equal([]string{"app:80", "app-canary:20"}))
		Expect(headers).To(BeEmpty())

		s.approve(ctx)
		s.waitStep(ctx, "Progressing 2/StepPaused")
		s.waitPods(ctx, map[string]int{"v1": 2, "v2": 2})
		backends, headers = s.route(ctx)
		Expect(headers).To(Equal([]string{"x-canary=yes"}), "matches win over the weight: the header goes to the canary")
		Expect(backends).To(Equal([]string{"app:1", "app-canary:1"}),
			"the stable weight is the route's own (defaulted to 1), the canary rule holds only the canary backend")

		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 4})
		Eventually(func() []string { b, _ := s.route(ctx); return b }).WithContext(ctx).WithTimeout(time.Minute).
			WithPolling(poll).Should(Equal([]string{"app:1"}), "the route is as it was (the CRD defaults weight to 1)")
		obj, err := dyn.Resource(httpRoutes).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.GetAnnotations()).To(BeEmpty(), "no bookkeeping left on the HTTPRoute")
		trafficWorld{ns: s.ns}.expectNoCanaryService(ctx, "app")
	})

	It("takes traffic back and removes the canary objects when rolled back mid-canary", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.createYAML(ctx, appService, appIngress)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, `canary:
  steps:
  - {replicas: 1, traffic: 20%}
  - {replicas: 100%}
  trafficRoutings:
  - {service: app, gracePeriodSeconds: 0, ingress: {name: app}}`)
		world := trafficWorld{ns: s.ns}
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		Expect(world.canaryAnnotations(ctx, "app")).To(HaveKeyWithValue("canary-weight", "20"))

		s.setVersion(ctx, "v1")
		s.waitPhase(ctx, "Healthy")
		Expect(s.succeeded(ctx)).To(Equal("False/Rollback"))
		s.waitPods(ctx, map[string]int{"v1": 4})
		world.expectNoCanary(ctx, "app", "app")
		svc, err := world.service(ctx, "app")
		Expect(err).NotTo(HaveOccurred())
		Expect(svc.Spec.Selector).To(Equal(map[string]string{"app": "app"}))
		s.expectReleased(ctx)
	})

	It("stalls with a clear condition, upgrading nothing, when the Ingress does not exist", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 3)
		s.createYAML(ctx, appService)
		s.waitPods(ctx, map[string]int{"v1": 3})
		s.rollout(ctx, `canary:
  steps:
  - {replicas: 1, traffic: 20%}
  - {replicas: 100%}
  trafficRoutings:
  - {service: app, ingress: {name: missing}}`)
		s.setVersion(ctx, "v2")
		Eventually(func() string { return s.condition(ctx, "Stalled") }).WithContext(ctx).WithTimeout(time.Minute).
			WithPolling(poll).Should(Equal(fmt.Sprintf("True/TrafficRoutingFailed: traffic routing failed: ingress: trafficRoutings[0].ingress.name: Ingress %s/missing not found", s.ns)))
		expectRolloutEventIn(ctx, s.ns, appName, fmt.Sprintf("ingress: trafficRoutings[0].ingress.name: Ingress %s/missing not found", s.ns))
		Consistently(func() map[string]int { return s.pods(ctx) }).WithContext(ctx).WithTimeout(3*time.Second).
			WithPolling(poll).Should(Equal(map[string]int{"v1": 3}), "no pod is upgraded while the traffic cannot be controlled")

		By("creating the Ingress: the release goes on")
		s.createYAML(ctx, `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: missing}
spec:
  rules:
  - http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}`)
		s.waitStep(ctx, "Progressing 1/StepPaused")
		Expect(s.condition(ctx, "Stalled")).To(HavePrefix("True/AwaitingApproval"))
	})
})

// expectNoCanaryService waits until the canary Service of service is gone.
func (w trafficWorld) expectNoCanaryService(ctx context.Context, service string) {
	GinkgoHelper()
	Eventually(func() error { _, err := w.service(ctx, service+"-canary"); return err }).WithContext(ctx).
		WithTimeout(time.Minute).WithPolling(poll).Should(MatchError(ContainSubstring("not found")))
}

// condition is a Rollout condition as "status/reason: message".
func (s *story) condition(ctx context.Context, t string) string {
	conds, _, _ := unstructured.NestedSlice(s.status(ctx), "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == t {
			return fmt.Sprintf("%v/%v: %v", m["status"], m["reason"], m["message"])
		}
	}
	return ""
}
