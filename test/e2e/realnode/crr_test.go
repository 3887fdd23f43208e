package realnode

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// minStarted is the request's minStartedSeconds: it completes no sooner than this after the new container
// started.
const minStarted = 5

var _ = Describe("ContainerRecreateRequests on a real node", func() {
	It("runs the preStop handler, stops the container for the kubelet to restart, and waits minStartedSeconds", func(ctx SpecContext) {
		ns := newNamespace(ctx, "crr-")
		createCloneSet(ctx, ns, 1)
		waitVersions(ctx, ns, map[string]int{"v1": 1})
		before := appPods(ctx, ns)[0]
		Expect(answer(before, "/state")).To(BeEmpty(), "no preStop handler ran yet")

		createCRR(ctx, ns, before.Name)
		status := waitCRRCompleted(ctx, ns)
		Expect(status["containerRecreateStates"]).To(ConsistOf(HaveKeyWithValue("phase", "Succeeded")))

		waitVersions(ctx, ns, map[string]int{"v1": 1})
		after := appPods(ctx, ns)[0]
		expectSamePods([]corev1.Pod{before}, []corev1.Pod{after})
		old, cur := appContainer(before), appContainer(after)
		Expect(cur.RestartCount).To(Equal(old.RestartCount + 1))
		Expect(cur.ContainerID).NotTo(Equal(old.ContainerID))
		started := cur.State.Running.StartedAt.Time

		By("the preStop handler having run in the old container, before the new one started")
		lines := strings.Fields(answer(after, "/state"))
		Expect(lines).To(HaveLen(1), "the handler ran once")
		ran, err := time.Parse(time.RFC3339Nano, lines[0])
		Expect(err).NotTo(HaveOccurred())
		// startedAt is in whole seconds: the handler ran before the second the new container started ended.
		Expect(ran).To(BeTemporally("<", started.Add(time.Second)))

		By("completion waiting for the new container to run minStartedSeconds")
		completed, err := time.Parse(time.RFC3339, fmt.Sprint(status["completionTime"]))
		Expect(err).NotTo(HaveOccurred())
		Expect(completed.Sub(started)).To(BeNumerically(">=", minStarted*time.Second))
	})
})

func createCRR(ctx context.Context, ns, pod string) {
	GinkgoHelper()
	doc := fmt.Sprintf(`apiVersion: apps.kruise.io/v1alpha1
kind: ContainerRecreateRequest
metadata: {name: restart-app, namespace: %s}
spec:
  podName: %s
  containers: [{name: app}]
  strategy: {minStartedSeconds: %d}
`, ns, pod, minStarted)
	obj := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
	_, err := dyn.Resource(crrs).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// waitCRRCompleted waits for the request's Completed phase and returns its status.
func waitCRRCompleted(ctx context.Context, ns string) map[string]any {
	GinkgoHelper()
	var status map[string]any
	Eventually(func() any {
		obj, err := dyn.Resource(crrs).Namespace(ns).Get(ctx, "restart-app", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		status, _, _ = unstructured.NestedMap(obj.Object, "status")
		return status["phase"]
	}).WithContext(ctx).WithTimeout(storyTimeout).WithPolling(poll).Should(Equal("Completed"),
		func() string { return fmt.Sprintf("status %v\n%s", status, describePods(ctx, ns)) })
	return status
}
