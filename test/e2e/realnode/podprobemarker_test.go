package realnode

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var (
	podProbeMarkers = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "podprobemarkers"}
	nodePodProbes   = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "nodepodprobes"}
)

// gameMarker probes the app's container twice: `testapp exit 0` passes, `testapp exit 3` fails.
const gameMarker = `apiVersion: apps.kruise.io/v1alpha1
kind: PodProbeMarker
metadata: {name: game, namespace: %s}
spec:
  selector: {matchLabels: {app: web}}
  probes:
  - name: idle
    containerName: app
    probe: {exec: {command: [/testapp, exit, "0"]}, periodSeconds: 1, failureThreshold: 1}
    podConditionType: game.flotilla.dev/idle
    markerPolicy:
    - {state: Succeeded, labels: {game.flotilla.dev/idle: "true"}}
    - {state: Failed, labels: {game.flotilla.dev/idle: "false"}}
  - name: busy
    containerName: app
    probe: {exec: {command: [/testapp, exit, "3"]}, periodSeconds: 1, failureThreshold: 1}
    podConditionType: game.flotilla.dev/serving
    markerPolicy:
    - {state: Failed, annotations: {game.flotilla.dev/serving: "no"}}
`

var _ = Describe("PodProbeMarkers on a real node", func() {
	It("runs exec probes in the real container and marks the pod with their results", func(ctx SpecContext) {
		ns := newNamespace(ctx, "ppm-")
		createCloneSet(ctx, ns, 1)
		waitVersions(ctx, ns, map[string]int{"v1": 1})
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(fmt.Appendf(nil, gameMarker, ns), &obj.Object)).To(Succeed())
		_, err := dyn.Resource(podProbeMarkers).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("the passing probe labels the pod and sets its condition True with the command's output")
		Eventually(func() string { return appPods(ctx, ns)[0].Labels["game.flotilla.dev/idle"] }).WithContext(ctx).
			WithTimeout(storyTimeout).WithPolling(poll).Should(Equal("true"), func() string { return describePods(ctx, ns) })
		pod := appPods(ctx, ns)[0]
		idle := podCondition(pod, "game.flotilla.dev/idle")
		Expect(idle).NotTo(BeNil())
		Expect(idle.Status).To(Equal(corev1.ConditionTrue))
		Expect(idle.Message).To(Equal("testapp v1: exit 0, KRUISE_EJOB_ID="))

		By("the failing probe sets its condition False with the exit code, and its annotation")
		Eventually(func() *corev1.PodCondition { return podCondition(appPods(ctx, ns)[0], "game.flotilla.dev/serving") }).
			WithContext(ctx).WithTimeout(storyTimeout).WithPolling(poll).Should(And(Not(BeNil()),
			HaveField("Status", corev1.ConditionFalse), HaveField("Message", "command exited with code 3: testapp v1: exit 3, KRUISE_EJOB_ID=")))
		// The condition and the annotation may land in separate writes.
		Eventually(func() map[string]string { return appPods(ctx, ns)[0].Annotations }).WithContext(ctx).
			WithTimeout(storyTimeout).WithPolling(poll).Should(HaveKeyWithValue("game.flotilla.dev/serving", "no"))

		By("deleting the marker takes its probes off the node")
		Expect(dyn.Resource(podProbeMarkers).Namespace(ns).Delete(ctx, "game", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() []string { return nodeProbeNames(ctx, pod.Spec.NodeName, string(pod.UID)) }).WithContext(ctx).
			WithTimeout(storyTimeout).WithPolling(poll).Should(BeEmpty())
	})
})

// podCondition is the pod's condition of type t, or nil.
func podCondition(p corev1.Pod, t string) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if string(p.Status.Conditions[i].Type) == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// nodeProbeNames are the probe names the node's NodePodProbe lists for the pod with uid.
func nodeProbeNames(ctx context.Context, node, uid string) []string {
	GinkgoHelper()
	npp, err := dyn.Resource(nodePodProbes).Get(ctx, node, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	entries, _, _ := unstructured.NestedSlice(npp.Object, "spec", "podProbes")
	var names []string
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if m["uid"] != uid {
			continue
		}
		probes, _, _ := unstructured.NestedSlice(m, "probes")
		for _, p := range probes {
			pm, _ := p.(map[string]any)
			names = append(names, fmt.Sprint(pm["name"]))
		}
	}
	return names
}
