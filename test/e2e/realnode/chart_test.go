package realnode

import (
	"context"
	"net/http"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/images"
)

var _ = Describe("The chart on a real node", func() {
	It("runs the manager and the node agent as real pods of the images make images builds", func(ctx SpecContext) {
		manager := onlyPod(ctx, flotillaNamespace, "app.kubernetes.io/component=manager")
		agent := onlyPod(ctx, flotillaNamespace, "app.kubernetes.io/component=nodeagent")
		expectRunsImage(manager, products["flotilla-manager"])
		expectRunsImage(agent, products["flotilla-nodeagent"])

		By("the node agent reaching the node's containerd: its /healthz fails while the runtime does not answer")
		resp, err := http.Get("http://" + agent.Status.PodIP + ":" + strconv.Itoa(agentPort) + "/healthz")
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))

		By("the API server calling the manager pod's webhooks: CloneSet pods get the KruisePodReady gate")
		ns := newNamespace(ctx, "chart-")
		createCloneSet(ctx, ns, 1)
		waitVersions(ctx, ns, map[string]int{"v1": 1})
		pod := appPods(ctx, ns)[0]
		Expect(pod.Spec.ReadinessGates).To(ContainElement(corev1.PodReadinessGate{ConditionType: "KruisePodReady"}),
			"the pod webhook (mpod.kb.io) served from the manager pod injects it")
		Expect(conditionStatus(pod, "KruisePodReady")).To(Equal(corev1.ConditionTrue))
	})
})

// onlyPod is the one Ready pod with selector in ns.
func onlyPod(ctx context.Context, ns, selector string) corev1.Pod {
	GinkgoHelper()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	Expect(err).NotTo(HaveOccurred())
	Expect(list.Items).To(HaveLen(1), "pods %s in %s", selector, ns)
	return list.Items[0]
}

// expectRunsImage checks a Flotilla pod runs on the real node, Ready, from the image built by this run:
// the chart's default reference, and the runtime's image ID is the built image's.
func expectRunsImage(pod corev1.Pod, built images.Result) {
	GinkgoHelper()
	Expect(pod.Spec.NodeName).To(Equal(cluster.RealNodeName))
	Expect(podReady(pod)).To(BeTrue(), "pod %s is Ready", pod.Name)
	Expect(pod.Status.ContainerStatuses).To(HaveLen(1))
	cs := pod.Status.ContainerStatuses[0]
	Expect(cs.Image).To(Equal(built.Ref.String()), "the chart's default image is the one make images names")
	config, err := built.Image.ConfigName()
	Expect(err).NotTo(HaveOccurred())
	Expect(cs.ImageID).To(Or(HaveSuffix(config.Hex), HaveSuffix(built.Digest.Hex)), "container %s runs the image built here", cs.Name)
}
