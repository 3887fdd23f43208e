package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

const nginxPrefix = "nginx.ingress.kubernetes.io/"

// trafficWorld reads a namespace's Services, Ingresses and pods the way a person checking a canary would.
type trafficWorld struct{ ns string }

func (w trafficWorld) service(ctx context.Context, name string) (*corev1.Service, error) {
	return kube.CoreV1().Services(w.ns).Get(ctx, name, metav1.GetOptions{})
}

func (w trafficWorld) ingress(ctx context.Context, name string) (*networkingv1.Ingress, error) {
	return kube.NetworkingV1().Ingresses(w.ns).Get(ctx, name, metav1.GetOptions{})
}

// canaryAnnotations are the nginx canary annotations of the canary Ingress ("gone" when there is none).
func (w trafficWorld) canaryAnnotations(ctx context.Context, ingress string) map[string]string {
	ing, err := w.ingress(ctx, ingress+"-canary")
	if apierrors.IsNotFound(err) {
		return map[string]string{"gone": "true"}
	}
	Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for k, v := range ing.Annotations {
		if len(k) > len(nginxPrefix) && k[:len(nginxPrefix)] == nginxPrefix {
			out[k[len(nginxPrefix):]] = v
		}
	}
	return out
}

// expectGoneService waits until a Service no longer exists.
func (w trafficWorld) expectNoCanary(ctx context.Context, service, ingress string) {
	GinkgoHelper()
	Eventually(func() bool {
		_, err := w.service(ctx, service+"-canary")
		return apierrors.IsNotFound(err)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue(), "canary Service removed")
	_, err := w.ingress(ctx, ingress+"-canary")
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "canary Ingress removed: %v", err)
}

// weightRecorder samples the canary Ingress's canary-weight until stopped and keeps the distinct values in
// the order they appeared.
type weightRecorder struct {
	mu   sync.Mutex
	seen []string
	stop context.CancelFunc
	done chan struct{}
}

func recordWeights(ctx context.Context, w trafficWorld, ingress string) *weightRecorder {
	ctx, cancel := context.WithCancel(ctx)
	r := &weightRecorder{stop: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(r.done)
		for ctx.Err() == nil {
			if ing, err := w.ingress(ctx, ingress+"-canary"); err == nil {
				r.add(ing.Annotations[nginxPrefix+"canary-weight"])
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return r
}

func (r *weightRecorder) add(v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v != "" && (len(r.seen) == 0 || r.seen[len(r.seen)-1] != v) {
		r.seen = append(r.seen, v)
	}
}

func (r *weightRecorder) Seen() []string {
	r.stop()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen
}

// ownedByRollout: the object's controller is the named Rollout.
func ownedByRollout(refs []metav1.OwnerReference, name string) bool {
	for _, ref := range refs {
		if ref.Kind == "Rollout" && ref.Name == name && ptr.Deref(ref.Controller, false) {
			return true
		}
	}
	return false
}

// shortenPauses sets every step's pause duration to seconds, so the seed's 30 s pauses do not slow the suite.
func shortenPauses(obj *unstructured.Unstructured, seconds int64) {
	steps, _, _ := unstructured.NestedSlice(obj.Object, "spec", "strategy", "canary", "steps")
	for i, s := range steps {
		step := s.(map[string]any)
		if _, ok := step["pause"]; ok {
			step["pause"] = map[string]any{"duration": seconds}
		}
		steps[i] = step
	}
	Expect(unstructured.SetNestedSlice(obj.Object, steps, "spec", "strategy", "canary", "steps")).To(Succeed())
}

func setContainerEnv(ctx context.Context, ns, deployment, container, name, value string) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":%q,"env":[{"name":%q,"value":%q}]}]}}}}`, container, name, value)
	_, err := kube.AppsV1().Deployments(ns).Patch(ctx, deployment, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// podHashes counts the ready pods selected by app=<app> by pod-template-hash.
func podHashes(ctx context.Context, ns, app string) map[string]int {
	GinkgoHelper()
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	Expect(err).NotTo(HaveOccurred())
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(p) {
			out[p.Labels["pod-template-hash"]]++
		}
	}
	return out
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var _ = Describe("Canary release on nginx ingress (seed: rollouts-canary)", Ordered, func() {
	var ns string
	var world trafficWorld
	var stableService *corev1.Service
	var stableIngress *networkingv1.Ingress

	BeforeAll(func(ctx SpecContext) {
		ns = newNamespace(ctx, "nginx-canary-")
		world = trafficWorld{ns: ns}
		for _, dep := range []string{"044-service-echoserver.yaml", "044-ingress-echoserver.yaml", "044-deployment-echoserver.yaml"} {
			_, err := applyAndCleanUp(ctx, inNamespace(seedObject("deps/"+dep), ns))
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(func() map[string]int { return podHashes(ctx, ns, "echoserver") }).WithContext(ctx).
			WithTimeout(2 * time.Minute).WithPolling(poll).Should(HaveLen(1))
		ro := inNamespace(seedObject("044-rollout-rollouts-canary.yaml"), ns)
		shortenPauses(ro, 1)
		_, err := applyAndCleanUp(ctx, ro)
		Expect(err).NotTo(HaveOccurred())
		var errs [2]error
		stableService, errs[0] = world.service(ctx, "echoserver")
		stableIngress, errs[1] = world.ingress(ctx, "echoserver")
		Expect(errs).To(HaveEach(BeNil()))
	})

	It("sends 5% of traffic to one canary pod, then moves through 40/60/80/100% and cleans up", func(ctx SpecContext) {
		readState := func() rolloutState { return readRollout(ctx, ns, "rollouts-canary") }
		Eventually(readState).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).
			Should(HaveField("Phase", "Healthy"))
		stableHash := sortedKeys(podHashes(ctx, ns, "echoserver"))[0]
		weights := recordWeights(ctx, world, "echoserver")
		setContainerEnv(ctx, ns, "echoserver", "echoserver", "NODE_NAME", "version2")

		By("step 1: one canary pod behind echoserver-canary, canary-weight 5")
		Eventually(readState).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).
			Should(Equal(rolloutState{Phase: "Progressing", Step: 1, State: "StepPaused",
				Message: "Rollout is in step(1/5), and you need manually confirm to enter the next step"}))
		hashes := podHashes(ctx, ns, "echoserver")
		Expect(hashes).To(HaveKeyWithValue(stableHash, 5), "the stable Deployment keeps its five pods")
		Expect(hashes).To(HaveLen(2), "one canary revision besides the stable one")
		canaryHash := ""
		for h, n := range hashes {
			if h != stableHash {
				canaryHash = h
				Expect(n).To(Equal(1), "step 1 runs one canary pod")
			}
		}

		canarySvc, err := world.service(ctx, "echoserver-canary")
		Expect(err).NotTo(HaveOccurred())
		Expect(canarySvc.Spec.Selector).To(Equal(map[string]string{"app": "echoserver", "pod-template-hash": canaryHash}))
		Expect(canarySvc.Spec.ClusterIP).NotTo(Equal(stableService.Spec.ClusterIP), "the canary Service has an address of its own")
		Expect(canarySvc.Spec.Ports).To(HaveLen(1))
		Expect(canarySvc.Spec.Ports[0].Port).To(Equal(int32(8080)))
		Expect(ownedByRollout(canarySvc.OwnerReferences, "rollouts-canary")).To(BeTrue(), "owner: %v", canarySvc.OwnerReferences)

		stableNow, err := world.service(ctx, "echoserver")
		Expect(err).NotTo(HaveOccurred())
		Expect(stableNow.Spec.Selector).To(Equal(map[string]string{"app": "echoserver", "pod-template-hash": stableHash}),
			"the stable Service selects only stable pods while the canary runs")

		canaryIng, err := world.ingress(ctx, "echoserver-canary")
		Expect(err).NotTo(HaveOccurred())
		Expect(canaryIng.Annotations).To(HaveKeyWithValue(nginxPrefix+"canary", "true"))
		Expect(canaryIng.Annotations).To(HaveKeyWithValue(nginxPrefix+"canary-weight", "5"))
		Expect(canaryIng.Spec.IngressClassName).To(Equal(ptr.To("nginx")))
		Expect(canaryIng.Spec.Rules).To(HaveLen(1))
		Expect(canaryIng.Spec.Rules[0].Host).To(Equal("echo.k8s.local"))
		path := canaryIng.Spec.Rules[0].HTTP.Paths[0]
		Expect(path.Path).To(Equal("/apis/echo"))
		Expect(path.Backend.Service.Name).To(Equal("echoserver-canary"))
		Expect(path.Backend.Service.Port.Number).To(Equal(int32(8080)))
		Expect(ownedByRollout(canaryIng.OwnerReferences, "rollouts-canary")).To(BeTrue())
		expectRolloutEventIn(ctx, ns, "rollouts-canary", "routing step 1: weight 5%")

		By("approving (kubectl kruise rollout approve): the rest runs on 1 s pauses to 100%")
		approveRollout(ctx, ns, "rollouts-canary")
		Eventually(readState).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(poll).
			Should(Equal(rolloutState{Phase: "Healthy", Step: 5, State: "Completed", Message: "workload deployment is completed"}))
		Expect(weights.Seen()).To(Equal([]string{"0", "5", "40", "60", "80", "100"}),
			"the canary Ingress is created routing nothing, then follows every step")

		By("after the release: five new pods, no canary objects, the stable Service and Ingress as they were")
		Eventually(func() map[string]int { return podHashes(ctx, ns, "echoserver") }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(poll).Should(Equal(map[string]int{canaryHash: 5}))
		world.expectNoCanary(ctx, "echoserver", "echoserver")
		after, err := world.service(ctx, "echoserver")
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Spec).To(Equal(stableService.Spec), "the stable Service's spec is restored exactly")
		ingAfter, err := world.ingress(ctx, "echoserver")
		Expect(err).NotTo(HaveOccurred())
		Expect(ingAfter.Spec).To(Equal(stableIngress.Spec))
		Expect(ingAfter.Annotations).To(Equal(stableIngress.Annotations), "the stable Ingress is never changed")
	})
})

// expectRolloutEventIn waits for an event about a named Rollout (any Rollout of ns when name is empty).
func expectRolloutEventIn(ctx context.Context, ns, name, note string) {
	GinkgoHelper()
	Eventually(func() []string {
		list, err := kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "Rollout" && (name == "" || e.Regarding.Name == name) {
				// A decision that makes several transitions records their notes in one event.
				notes = append(notes, strings.Split(e.Note, "; ")...)
			}
		}
		return notes
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(ContainElement(note))
}

// abFixture creates the A/B story's Deployment, Service and Ingress (the seed shows only the Rollout).
func abFixture(ctx context.Context, ns string) {
	GinkgoHelper()
	docs := []string{`
apiVersion: apps/v1
kind: Deployment
metadata: {name: workload-demo, labels: {app: demo}}
spec:
  replicas: 10
  selector: {matchLabels: {app: demo}}
  template:
    metadata: {labels: {app: demo}}
    spec:
      containers:
      - name: main
        image: registry.example/demo:1
        env: [{name: VERSION, value: v1}]`, `
apiVersion: v1
kind: Service
metadata: {name: service-demo}
spec:
  selector: {app: demo}
  ports: [{port: 80, targetPort: 8080}]`, `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ingress-demo}
spec:
  ingressClassName: nginx
  rules:
  - host: demo.example
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: service-demo, port: {number: 80}}}}`}
	for _, doc := range docs {
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
		_, err := applyAndCleanUp(ctx, inNamespace(obj, ns))
		Expect(err).NotTo(HaveOccurred())
	}
}

var _ = Describe("A/B test on nginx ingress, then batches (seed: rollouts-demo)", Ordered, func() {
	var ns string
	var world trafficWorld

	BeforeAll(func(ctx SpecContext) {
		ns = newNamespace(ctx, "ab-test-")
		world = trafficWorld{ns: ns}
		abFixture(ctx, ns)
		Eventually(func() map[string]int { return podHashes(ctx, ns, "demo") }).WithContext(ctx).
			WithTimeout(2 * time.Minute).WithPolling(poll).Should(HaveEach(10))
		_, err := applyAndCleanUp(ctx, inNamespace(seedObject("045-rollout-rollouts-demo.yaml"), ns))
		Expect(err).NotTo(HaveOccurred())
	})

	It("routes user-agent: pc to the new pods, then drops the match for 50% and 100%", func(ctx SpecContext) {
		readState := func() rolloutState { return readRollout(ctx, ns, "rollouts-demo") }
		Eventually(readState).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(HaveField("Phase", "Healthy"))
		stableHash := sortedKeys(podHashes(ctx, ns, "demo"))[0]
		setContainerEnv(ctx, ns, "workload-demo", "main", "VERSION", "v2")

		By("step 1: three new pods; requests with user-agent: pc go to them")
		Eventually(readState).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).
			Should(Equal(rolloutState{Phase: "Progressing", Step: 1, State: "StepPaused",
				Message: "Rollout is in step(1/3), and you need manually confirm to enter the next step"}))
		hashes := podHashes(ctx, ns, "demo")
		Expect(hashes).To(HaveKeyWithValue(stableHash, 7))
		Expect(hashes).To(HaveLen(2))
		var newHash string
		for h := range hashes {
			if h != stableHash {
				newHash = h
			}
		}
		Expect(hashes[newHash]).To(Equal(3))
		canarySvc, err := world.service(ctx, "service-demo-canary")
		Expect(err).NotTo(HaveOccurred())
		Expect(canarySvc.Spec.Selector).To(Equal(map[string]string{"app": "demo", "pod-template-hash": newHash}))
		stable, err := world.service(ctx, "service-demo")
		Expect(err).NotTo(HaveOccurred())
		Expect(stable.Spec.Selector).To(Equal(map[string]string{"app": "demo", "pod-template-hash": stableHash}))
		Expect(world.canaryAnnotations(ctx, "ingress-demo")).To(Equal(map[string]string{
			"canary": "true", "canary-by-header": "user-agent", "canary-by-header-value": "pc",
		}), "a header match and no weight")

		By("approving step 1: the match goes before the batch of 50% grows")
		approveRollout(ctx, ns, "rollouts-demo")
		Eventually(readState).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).
			Should(HaveField("Step", int64(2)))
		Eventually(readState).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).
			Should(HaveField("State", "StepPaused"))
		world.expectNoCanary(ctx, "service-demo", "ingress-demo")
		stable, err = world.service(ctx, "service-demo")
		Expect(err).NotTo(HaveOccurred())
		Expect(stable.Spec.Selector).To(Equal(map[string]string{"app": "demo"}), "all traffic follows the original balancing")
		Eventually(func() map[string]int { return podHashes(ctx, ns, "demo") }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(poll).Should(Equal(map[string]int{stableHash: 5, newHash: 5}))

		By("approving step 2: everything on the new version")
		approveRollout(ctx, ns, "rollouts-demo")
		Eventually(readState).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).
			Should(Equal(rolloutState{Phase: "Healthy", Step: 3, State: "Completed", Message: "workload deployment is completed"}))
		Eventually(func() map[string]int { return podHashes(ctx, ns, "demo") }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(poll).Should(Equal(map[string]int{newHash: 10}))
		world.expectNoCanary(ctx, "service-demo", "ingress-demo")
	})
})
