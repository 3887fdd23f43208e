package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/test/e2e/framework"
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
		Expect(s.condition(ctx, "Stalled")).To(BeEmpty(), "the traffic failure is over")
		Expect(s.condition(ctx, "Reconciling")).To(HavePrefix("True/AwaitingApproval"))
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
	return conditionIn(conds, t)
}

// readCondition is the condition of a type of a Rollout, as "status/reason: message" ("" when absent).
func readCondition(ctx context.Context, ns, name, t string) string {
	GinkgoHelper()
	obj, err := dyn.Resource(rolloutsV1beta1).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	return conditionIn(conds, t)
}

func conditionIn(conds []any, t string) string {
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == t {
			return fmt.Sprintf("%v/%v: %v", m["status"], m["reason"], m["message"])
		}
	}
	return ""
}

var (
	virtualServices  = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1beta1", Resource: "virtualservices"}
	destinationRules = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1beta1", Resource: "destinationrules"}
)

const appVirtualService = `
apiVersion: networking.istio.io/v1beta1
kind: VirtualService
metadata: {name: app}
spec:
  hosts: [app.example]
  http:
  - route:
    - destination: {host: app}`

const appDestinationRule = `
apiVersion: networking.istio.io/v1beta1
kind: DestinationRule
metadata: {name: app}
spec:
  host: app
  subsets:
  - {name: stable, labels: {app: app}}`

// istioObject reads an Istio object's spec and annotations.
func (s *story) istioObject(ctx context.Context, gvr schema.GroupVersionResource) (map[string]any, map[string]string) {
	GinkgoHelper()
	obj, err := dyn.Resource(gvr).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	return spec, obj.GetAnnotations()
}

var _ = Describe("Traffic routing through Lua and scripts from the configuration", func() {
	It("runs an Istio VirtualService + DestinationRule canary through the built-in Lua scripts", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.createYAML(ctx, appService, appVirtualService, appDestinationRule)
		s.waitPods(ctx, map[string]int{"v1": 4})
		vsBefore, _ := s.istioObject(ctx, virtualServices)
		drBefore, _ := s.istioObject(ctx, destinationRules)
		s.rollout(ctx, `canary:
  steps:
  - {replicas: 1, traffic: 20%}
  - {replicas: 100%}
  trafficRoutings:
  - service: app
    gracePeriodSeconds: 0
    customNetworkRefs:
    - {apiVersion: networking.istio.io/v1beta1, kind: VirtualService, name: app}
    - {apiVersion: networking.istio.io/v1beta1, kind: DestinationRule, name: app}`)
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")

		vs, annotations := s.istioObject(ctx, virtualServices)
		routes, _, _ := unstructured.NestedSlice(vs, "http")
		Expect(routes).To(HaveLen(1))
		Expect(routes[0]).To(HaveKeyWithValue("route", ConsistOf(
			map[string]any{"destination": map[string]any{"host": "app"}, "weight": int64(80)},
			map[string]any{"destination": map[string]any{"host": "app-canary"}, "weight": int64(20)},
		)))
		Expect(annotations).To(HaveKey("rollouts.kruise.io/original-spec-configuration"))
		dr, _ := s.istioObject(ctx, destinationRules)
		subsets, _, _ := unstructured.NestedSlice(dr, "subsets")
		Expect(subsets).To(ContainElement(HaveKeyWithValue("name", "canary")))

		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 4})
		Eventually(func() map[string]any { spec, _ := s.istioObject(ctx, virtualServices); return spec }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(poll).Should(Equal(vsBefore), "the VirtualService is restored exactly")
		drAfter, drAnnotations := s.istioObject(ctx, destinationRules)
		Expect(drAfter).To(Equal(drBefore))
		Expect(drAnnotations).NotTo(HaveKey("rollouts.kruise.io/original-spec-configuration"))
	})

	It("routes by cookie on nginx, and uses an ingress class script from the configuration ConfigMap", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 2)
		s.createYAML(ctx, appService, appIngress)
		s.waitPods(ctx, map[string]int{"v1": 2})
		s.rollout(ctx, `canary:
  steps:
  - replicas: 1
    matches:
    - headers: [{name: canary-by-cookie, value: beta}]
  - {replicas: 100%}
  trafficRoutings:
  - {service: app, gracePeriodSeconds: 0, ingress: {name: app}}`)
		world := trafficWorld{ns: s.ns}
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		Expect(world.canaryAnnotations(ctx, "app")).To(Equal(map[string]string{"canary": "true", "canary-by-cookie": "beta"}))
		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		world.expectNoCanary(ctx, "app", "app")

		By("a class only the configuration ConfigMap knows")
		ensureNamespace(ctx, framework.DefaultWebhookNamespace)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kruise-rollout-configuration", Namespace: framework.DefaultWebhookNamespace},
			Data: map[string]string{"lua.traffic.routing.ingress.acme": `
local out = {}
out["acme.example/canary"] = "on"
out["acme.example/percent"] = obj.weight
return out`}}
		_, err := kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = kube.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{})
		})
		s.specPatch(ctx, `{"spec":{"strategy":{"canary":{"steps":[{"replicas":1,"traffic":"30%"},{"replicas":"100%"}],
			"trafficRoutings":[{"service":"app","gracePeriodSeconds":0,"ingress":{"name":"app","classType":"acme"}}]}}}}`)
		s.setVersion(ctx, "v3")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		ing, err := world.ingress(ctx, "app-canary")
		Expect(err).NotTo(HaveOccurred())
		Expect(ing.Annotations).To(Equal(map[string]string{"acme.example/canary": "on", "acme.example/percent": "30"}))
	})

	It("stalls with the script's error, leaving traffic on stable, when an ingress class script fails", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 2)
		s.createYAML(ctx, appService, appIngress)
		s.waitPods(ctx, map[string]int{"v1": 2})
		ensureNamespace(ctx, framework.DefaultWebhookNamespace)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kruise-rollout-configuration", Namespace: framework.DefaultWebhookNamespace},
			Data: map[string]string{"lua.traffic.routing.ingress.broken": "local a = {}\nerror(\"no canary for \" .. obj.canaryService)"}}
		_, err := kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			_, err = kube.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
		}
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = kube.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{})
		})
		s.rollout(ctx, `canary:
  steps:
  - {replicas: 1, traffic: 20%}
  - {replicas: 100%}
  trafficRoutings:
  - {service: app, gracePeriodSeconds: 0, ingress: {name: app, classType: broken}}`)
		s.setVersion(ctx, "v2")
		Eventually(func() string { return s.condition(ctx, "Stalled") }).WithContext(ctx).WithTimeout(time.Minute).
			WithPolling(poll).Should(And(HavePrefix("True/TrafficRoutingFailed:"), ContainSubstring("no canary for app-canary"),
			ContainSubstring(":2:")), "the condition carries the script's error and line")
		_, err = trafficWorld{ns: s.ns}.ingress(ctx, "app-canary")
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no canary Ingress: %v", err)
		Expect(s.pods(ctx)).To(Equal(map[string]int{"v1": 2}), "no pod upgraded")
	})

	It("restores everything when the Rollout is deleted mid-canary", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 2)
		s.createYAML(ctx, appService, appIngress)
		s.waitPods(ctx, map[string]int{"v1": 2})
		s.rollout(ctx, `canary:
  steps:
  - {replicas: 1, traffic: 50%}
  - {replicas: 100%}
  trafficRoutings:
  - {service: app, gracePeriodSeconds: 0, ingress: {name: app}}`)
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		world := trafficWorld{ns: s.ns}
		Expect(world.canaryAnnotations(ctx, "app")).To(HaveKeyWithValue("canary-weight", "50"))

		Expect(dyn.Resource(rolloutsV1beta1).Namespace(s.ns).Delete(ctx, appName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			_, err := dyn.Resource(rolloutsV1beta1).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue())
		world.expectNoCanary(ctx, "app", "app")
		svc, err := world.service(ctx, "app")
		Expect(err).NotTo(HaveOccurred())
		Expect(svc.Spec.Selector).To(Equal(map[string]string{"app": "app"}))
		s.waitPods(ctx, map[string]int{"v2": 2})
	})
})

var trafficRoutingsV1alpha1 = schema.GroupVersionResource{Group: "rollouts.kruise.io", Version: "v1alpha1", Resource: "trafficroutings"}

// trafficRouting reads a TrafficRouting's phase and finalizers.
func (s *story) trafficRouting(ctx context.Context, name string) (string, []string) {
	GinkgoHelper()
	obj, err := dyn.Resource(trafficRoutingsV1alpha1).Namespace(s.ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	return phase, obj.GetFinalizers()
}

var _ = Describe("End-to-end canary through a TrafficRouting", func() {
	It("routes the TrafficRouting's strategy while the Rollout that names it releases, and restores it after", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 2)
		s.createYAML(ctx, appService, appVirtualService, `
apiVersion: rollouts.kruise.io/v1alpha1
kind: TrafficRouting
metadata: {name: mesh}
spec:
  objectRef:
  - service: app
    gracePeriodSeconds: 0
    customNetworkRefs:
    - {apiVersion: networking.istio.io/v1beta1, kind: VirtualService, name: app}
  strategy:
    matches:
    - headers: [{type: Exact, name: x-release, value: canary}]`)
		s.waitPods(ctx, map[string]int{"v1": 2})
		vsBefore, _ := s.istioObject(ctx, virtualServices)
		phase := func() string { p, _ := s.trafficRouting(ctx, "mesh"); return p }
		Eventually(phase).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Equal("Healthy"))

		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 100%")
		s.specPatch(ctx, `{"metadata":{"annotations":{"rollouts.kruise.io/trafficrouting":"mesh"}}}`)
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		Eventually(phase).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Equal("Progressing"))
		_, finalizers := s.trafficRouting(ctx, "mesh")
		Expect(finalizers).To(ContainElement("progressing.rollouts.kruise.io/" + appName))
		vs, _ := s.istioObject(ctx, virtualServices)
		routes, _, _ := unstructured.NestedSlice(vs, "http")
		Expect(routes).To(HaveLen(2), "a route for the header in front of the original one")
		Expect(routes[0]).To(HaveKeyWithValue("match", ConsistOf(HaveKeyWithValue("headers",
			HaveKeyWithValue("x-release", HaveKeyWithValue("exact", "canary"))))))

		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		Eventually(phase).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Equal("Healthy"))
		_, finalizers = s.trafficRouting(ctx, "mesh")
		Expect(finalizers).To(Equal([]string{"rollouts.kruise.io/trafficrouting"}))
		Eventually(func() map[string]any { spec, _ := s.istioObject(ctx, virtualServices); return spec }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(poll).Should(Equal(vsBefore))
	})
})
