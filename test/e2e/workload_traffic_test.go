package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// selected counts the live, ready pods a Service selects, by version: what the Service sends traffic to.
func (w trafficWorld) selected(ctx context.Context, service string) map[string]int {
	GinkgoHelper()
	svc, err := w.service(ctx, service)
	Expect(err).NotTo(HaveOccurred())
	list, err := kube.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	Expect(err).NotTo(HaveOccurred())
	out := map[string]int{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && podReady(p) {
			out[versionOf(p.Spec.Containers[0])]++
		}
	}
	return out
}

// expectSplit checks that the canary Service reaches only the new pods and the stable Service only the old.
func (w trafficWorld) expectSplit(ctx context.Context, service string, stable, canary map[string]int) {
	GinkgoHelper()
	Eventually(func() map[string]int { return w.selected(ctx, service+"-canary") }).WithContext(ctx).
		WithTimeout(time.Minute).WithPolling(poll).Should(Equal(canary), "the canary Service selects the new pods only")
	Eventually(func() map[string]int { return w.selected(ctx, service) }).WithContext(ctx).
		WithTimeout(time.Minute).WithPolling(poll).Should(Equal(stable), "the stable Service selects the old pods only")
}

// expectRestored checks that the release left no canary objects and the Service selects every pod again.
func (w trafficWorld) expectRestored(ctx context.Context, service, ingress string, all map[string]int) {
	GinkgoHelper()
	w.expectNoCanary(ctx, service, ingress)
	svc, err := w.service(ctx, service)
	Expect(err).NotTo(HaveOccurred())
	Expect(svc.Spec.Selector).To(Equal(appLabels()), "the stable Service's selector is the user's again")
	Expect(w.selected(ctx, service)).To(Equal(all))
}

const headerABStrategy = `canary:
  steps:
  - replicas: 1
    matches:
    - headers: [{type: Exact, name: x-canary, value: "yes"}]
  - replicas: 100%
  trafficRoutings:
  - {service: app, gracePeriodSeconds: 0, ingress: {name: app}}`

var _ = Describe("Traffic routing for partition-style workloads", func() {
	DescribeTable("routes an A/B header to the new pods on nginx, then releases them all",
		func(ctx SpecContext, kind string) {
			s := newStory(ctx, kind, 4)
			s.createYAML(ctx, appService, appIngress)
			s.waitPods(ctx, map[string]int{"v1": 4})
			s.rollout(ctx, headerABStrategy)
			world := trafficWorld{ns: s.ns}
			s.setVersion(ctx, "v2")
			s.waitStep(ctx, "Progressing 1/StepPaused")
			s.waitPods(ctx, map[string]int{"v1": 3, "v2": 1})
			world.expectSplit(ctx, "app", map[string]int{"v1": 3}, map[string]int{"v2": 1})
			Expect(world.canaryAnnotations(ctx, "app")).To(Equal(map[string]string{
				"canary": "true", "canary-by-header": "x-canary", "canary-by-header-value": "yes",
			}), "a header match and no weight")

			s.approve(ctx)
			s.waitPhase(ctx, "Healthy")
			s.waitPods(ctx, map[string]int{"v2": 4})
			world.expectRestored(ctx, "app", "app", map[string]int{"v2": 4})
			Expect(s.succeeded(ctx)).To(Equal("True/Success"))
			s.expectReleased(ctx)
		},
		Entry("a CloneSet", "CloneSet"),
		Entry("a StatefulSet", "StatefulSet"),
	)

	It("runs a blue-green Deployment behind an Ingress: all new pods first, then the traffic in steps", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.createYAML(ctx, appService, appIngress)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, `blueGreen:
  steps:
  - {replicas: 100%, traffic: 0%}
  - {replicas: 100%, traffic: 50%}
  - {replicas: 100%, traffic: 100%}
  trafficRoutings:
  - {service: app, gracePeriodSeconds: 0, ingress: {name: app}}`)
		world := trafficWorld{ns: s.ns}
		s.setVersion(ctx, "v2")
		approveGreen := func() { s.statusPatch(ctx, `{"status":{"blueGreenStatus":{"currentStepState":"StepReady"}}}`) }

		By("step 1: the green pods run beside the blue ones and take no traffic")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.waitPods(ctx, map[string]int{"v1": 4, "v2": 4})
		world.expectSplit(ctx, "app", map[string]int{"v1": 4}, map[string]int{"v2": 4})
		Expect(world.canaryAnnotations(ctx, "app")).To(HaveKeyWithValue("canary-weight", "0"))

		By("step 2: half the traffic to green, blue still whole")
		approveGreen()
		s.waitStep(ctx, "Progressing 2/StepPaused")
		Expect(world.canaryAnnotations(ctx, "app")).To(HaveKeyWithValue("canary-weight", "50"))
		Expect(s.pods(ctx)).To(Equal(map[string]int{"v1": 4, "v2": 4}))

		By("step 3: all traffic to green; blue goes only after the last approval")
		approveGreen()
		s.waitStep(ctx, "Progressing 3/StepPaused")
		Expect(world.canaryAnnotations(ctx, "app")).To(HaveKeyWithValue("canary-weight", "100"))
		Expect(s.pods(ctx)).To(Equal(map[string]int{"v1": 4, "v2": 4}))
		approveGreen()
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 4})
		world.expectRestored(ctx, "app", "app", map[string]int{"v2": 4})
		Expect(s.succeeded(ctx)).To(Equal("True/Success"))
		s.expectReleased(ctx)
	})
})
