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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// warmGate is the readiness gate the story's new pods wait on, so that the test decides when each is ready.
const warmGate = "example.com/warm"

var _ = Describe("Paced batches", func() {
	It("starts each next batch of a pause-0 release itself, and a pause stops it after the batch in flight", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		w := watchAppPods(ctx, s.ns)
		calls := deploymentWebhookCalls(ctx)
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n    pause: {duration: 0}\n  - replicas: 2\n    pause: {duration: 0}\n  - replicas: 100%")
		By("releasing a version whose pods wait on a readiness gate")
		s.setGatedVersion(ctx, "v2")

		By("step 1: the BatchRelease may go on to batch 2 by itself, but not before batch 1 is ready")
		Eventually(func() int64 { return s.batchPartition(ctx) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).
			Should(Equal(int64(1)), "the Rollout at step 1 lets the BatchRelease run one batch ahead")
		// The lead can be given before batch 1's pod exists.
		Eventually(func() int { return len(s.podsOf(ctx, "v2")) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).
			Should(Equal(1), "batch 1's pod")
		Consistently(func() int { return len(s.podsOf(ctx, "v2")) }).WithContext(ctx).WithTimeout(2*time.Second).WithPolling(poll).
			Should(Equal(1), "batch 2 waits for batch 1's pod")
		Expect(s.step(ctx)).To(Equal("Progressing 1/StepUpgrade"))

		By("batch 1's pod ready: batch 2 starts, and the Rollout's step follows")
		s.warm(ctx, s.podsOf(ctx, "v2")...)
		Eventually(func() int { return len(s.podsOf(ctx, "v2")) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Equal(2))
		s.waitStep(ctx, "Progressing 2/StepUpgrade")
		Eventually(func() int64 { return s.batchPartition(ctx) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Equal(int64(2)))

		By("paused during batch 2: the lead is taken back, and batch 3 does not start when batch 2 is ready")
		s.specPatch(ctx, `{"spec":{"strategy":{"paused":true}}}`)
		Eventually(func() int64 { return s.batchPartition(ctx) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Equal(int64(1)))
		s.warm(ctx, s.podsOf(ctx, "v2")...)
		s.waitPods(ctx, map[string]int{"v1": 2, "v2": 2})
		Consistently(func() int { return len(s.podsOf(ctx, "v2")) }).WithContext(ctx).WithTimeout(3*time.Second).WithPolling(poll).
			Should(Equal(2), "a paused Rollout's BatchRelease starts no new batch")

		By("resumed: the last batch runs and the release ends")
		s.specPatch(ctx, `{"spec":{"strategy":{"paused":false}}}`)
		Eventually(func() string {
			s.warm(ctx, s.podsOf(ctx, "v2")...)
			return s.succeeded(ctx)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Equal("True/Success"))
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 4})
		s.expectReleased(ctx)
		w.expect(ctx, s.ns, 5, 3)
		// The test's template patch and kube-controller-manager's revision annotations call the Deployment
		// webhook; the manager's own writes (marks, partitions, extra status, the hand-back) do not.
		GinkgoWriter.Printf("Deployment webhook calls during the release: %d\n", deploymentWebhookCalls(ctx)-calls)
		Expect(deploymentWebhookCalls(ctx)-calls).To(BeNumerically("<=", 4), "the manager's writes spare its own webhook")
	})
})

// deploymentWebhookCalls is the manager's count of Deployment webhook calls.
func deploymentWebhookCalls(ctx context.Context) int {
	GinkgoHelper()
	return managerCounter(ctx, "controller_runtime_webhook_requests_total{", `webhook="/mutate-apps-v1-deployment"`)
}

// setGatedVersion changes the Deployment's template to version, its pods waiting on warmGate (see warm).
func (s *story) setGatedVersion(ctx context.Context, version string) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"readinessGates":[{"conditionType":%q}],`+
		`"containers":[{"name":"app","env":[{"name":"VERSION","value":%q}]}]}}}}`, warmGate, version)
	_, err := kube.AppsV1().Deployments(s.ns).Patch(ctx, appName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// batchPartition is the BatchRelease's spec.releasePlan.batchPartition (-1: none, or no BatchRelease).
func (s *story) batchPartition(ctx context.Context) int64 {
	br, err := dyn.Resource(batchReleases).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
	if err != nil {
		return -1
	}
	p, ok, _ := unstructured.NestedInt64(br.Object, "spec", "releasePlan", "batchPartition")
	if !ok {
		return -1
	}
	return p
}

// warm sets the warmGate condition True on pods that lack it, as the component owning the gate would; the
// simulated kubelet writes the pod's status too, so each write is retried on a conflict.
func (s *story) warm(ctx context.Context, pods ...corev1.Pod) {
	GinkgoHelper()
	for _, p := range pods {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			pod, err := kube.CoreV1().Pods(s.ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || podCondition(pod, warmGate).Status == corev1.ConditionTrue {
				return err
			}
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: warmGate, Status: corev1.ConditionTrue})
			_, err = kube.CoreV1().Pods(s.ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
			return err
		})
		if !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
}
