package e2e

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

var (
	rolloutsV1alpha1 = schema.GroupVersionResource{Group: "rollouts.kruise.io", Version: "v1alpha1", Resource: "rollouts"}
	batchReleases    = schema.GroupVersionResource{Group: "rollouts.kruise.io", Version: "v1beta1", Resource: "batchreleases"}
)

// rolloutState is what clients read from a Rollout: kubectl's printer columns and Argo CD's health script.
type rolloutState struct {
	Phase   string
	Step    int64
	State   string
	Message string
}

func (s rolloutState) String() string {
	return fmt.Sprintf("%s step %d %s (%s)", s.Phase, s.Step, s.State, s.Message)
}

func readRollout(ctx context.Context, ns, name string) rolloutState {
	GinkgoHelper()
	obj, err := dyn.Resource(rolloutsV1alpha1).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	step, _, _ := unstructured.NestedInt64(obj.Object, "status", "canaryStatus", "currentStepIndex")
	state, _, _ := unstructured.NestedString(obj.Object, "status", "canaryStatus", "currentStepState")
	msg, _, _ := unstructured.NestedString(obj.Object, "status", "message")
	return rolloutState{Phase: phase, Step: step, State: state, Message: msg}
}

// seedRollout is the name of the seed document's Rollout.
const seedRollout = "rollout"

// newVersion is the VERSION the seed document releases.
const newVersion = "version-2"

func waitRollout(ctx context.Context, ns string, want rolloutState) {
	const name = seedRollout
	GinkgoHelper()
	Eventually(func() rolloutState {
		got := readRollout(ctx, ns, name)
		if want.Message == "" {
			got.Message = ""
		}
		return got
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Equal(want))
}

// approveRollout sends the status patch `kubectl kruise rollout approve` sends.
// kstatusOf computes what Flux and Helm's --wait see for the seed Rollout.
func kstatusOf(ctx context.Context, ns string) kstatus.Status {
	GinkgoHelper()
	obj, err := dyn.Resource(rolloutsV1alpha1).Namespace(ns).Get(ctx, seedRollout, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	res, err := kstatus.Compute(obj)
	Expect(err).NotTo(HaveOccurred())
	return res.Status
}

func approveRollout(ctx context.Context, ns, name string) {
	GinkgoHelper()
	patch := []byte(`{"status":{"canaryStatus":{"currentStepState":"StepReady"}}}`)
	_, err := dyn.Resource(rolloutsV1alpha1).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	Expect(err).NotTo(HaveOccurred())
}

type podCounts struct{ Updated, Stable, Ready int }

// deploymentPods counts a Deployment's pods by template: the updated ones run version, the others do not.
func deploymentPods(ctx context.Context, ns, version string) podCounts {
	GinkgoHelper()
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=busybox"})
	Expect(err).NotTo(HaveOccurred())
	var c podCounts
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if versionOf(p.Spec.Containers[0]) == version {
			c.Updated++
		} else {
			c.Stable++
		}
		if podReady(p) {
			c.Ready++
		}
	}
	return c
}

// versionOf is a container's VERSION environment variable, which the stories release.
func versionOf(c corev1.Container) string {
	for _, e := range c.Env {
		if e.Name == "VERSION" {
			return e.Value
		}
	}
	return ""
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func waitPods(ctx context.Context, ns string, want podCounts) {
	GinkgoHelper()
	Eventually(func() podCounts { return deploymentPods(ctx, ns, newVersion) }).
		WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Equal(want))
}

// availabilityWatch samples a Deployment's available replicas until stopped and keeps the lowest value.
type availabilityWatch struct {
	mu     sync.Mutex
	lowest int32
	stop   context.CancelFunc
	done   chan struct{}
}

func watchAvailability(ctx context.Context, ns, name string) *availabilityWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &availabilityWatch{lowest: 1 << 30, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			if d, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
				w.mu.Lock()
				w.lowest = min(w.lowest, d.Status.AvailableReplicas)
				w.mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return w
}

func (w *availabilityWatch) Lowest() int32 {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lowest
}

func setVersion(ctx context.Context, ns, name, version string) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"busybox","env":[{"name":"VERSION","value":%q}]}]}}}}`, version)
	_, err := kube.AppsV1().Deployments(ns).Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

func inNamespace(obj *unstructured.Unstructured, ns string) *unstructured.Unstructured {
	obj.SetNamespace(ns)
	return obj
}

func newNamespace(ctx context.Context, prefix string) string {
	GinkgoHelper()
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		_ = kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

func expectRolloutEvent(ctx context.Context, ns, note string) {
	GinkgoHelper()
	expectRolloutEventIn(ctx, ns, "", note)
}

func getDeployment(ctx context.Context, ns, name string) *appsv1.Deployment {
	GinkgoHelper()
	d, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return d
}

var _ = Describe("Rollout of a Deployment in batches", Ordered, func() {
	var ns string

	BeforeAll(func(ctx SpecContext) {
		ns = newNamespace(ctx, "multi-batch-")
		_, err := applyAndCleanUp(ctx, inNamespace(seedObject("deps/042-deployment-workload.yaml"), ns))
		Expect(err).NotTo(HaveOccurred())
		waitPods(ctx, ns, podCounts{Stable: 10, Ready: 10})
		_, err = applyAndCleanUp(ctx, inNamespace(seedObject("042-rollout-rollout.yaml"), ns))
		Expect(err).NotTo(HaveOccurred())
	})

	It("reports Healthy and Completed for a new Rollout (seed: `kubectl get rollout`)", func(ctx SpecContext) {
		waitRollout(ctx, ns, rolloutState{Phase: "Healthy", Step: 3, State: "Completed", Message: "workload deployment is completed"})
		Expect(getDeployment(ctx, ns, "workload").Labels).To(HaveKeyWithValue("rollouts.kruise.io/workload-type", "deployment"))
		Expect(kstatusOf(ctx, ns)).To(Equal(kstatus.CurrentStatus), "kstatus (Flux, Helm --wait) sees a settled Rollout as current")
	})

	It("upgrades one pod, then half, then all, each after an approval", func(ctx SpecContext) {
		avail := watchAvailability(ctx, ns, "workload")
		setVersion(ctx, ns, "workload", "version-2")

		By("batch 1: one pod of version-2, nine of version-1")
		waitRollout(ctx, ns, rolloutState{Phase: "Progressing", Step: 1, State: "StepPaused"})
		waitPods(ctx, ns, podCounts{Updated: 1, Stable: 9, Ready: 10})
		Expect(getDeployment(ctx, ns, "workload").Spec.Paused).To(BeTrue(), "the Deployment is frozen during the release")
		expectRolloutEvent(ctx, ns, "upgrade step(1) canary pods with new versions done")
		Expect(kstatusOf(ctx, ns)).To(Equal(kstatus.InProgressStatus),
			"kstatus sees a Rollout waiting for approval in progress: a healthy gate, not a failure")
		Expect(readCondition(ctx, ns, "rollout", "Reconciling")).To(Equal(
			"True/AwaitingApproval: Rollout is in step(1/3), and you need manually confirm to enter the next step; " +
				"to continue: kubectl kruise rollout approve rollout/rollout -n " + ns))
		Expect(readCondition(ctx, ns, "rollout", "Stalled")).To(BeEmpty())
		Expect(scrape(ctx, "http://"+manager.MetricsAddr+"/metrics")).To(MatchRegexp(`flotilla_rollout_releases_in_progress [1-9]`),
			"a release waiting for approval is in progress")
		Consistently(func() podCounts { return deploymentPods(ctx, ns, "version-2") }).
			WithContext(ctx).WithTimeout(3*time.Second).WithPolling(poll).Should(Equal(podCounts{Updated: 1, Stable: 9, Ready: 10}),
			"nothing moves without an approval")

		By("approving: five pods of version-2")
		approveRollout(ctx, ns, "rollout")
		waitRollout(ctx, ns, rolloutState{Phase: "Progressing", Step: 2, State: "StepPaused"})
		waitPods(ctx, ns, podCounts{Updated: 5, Stable: 5, Ready: 10})
		expectRolloutEvent(ctx, ns, "upgrade step(2) canary pods with new versions done")
		Eventually(func() []int64 {
			obj, err := dyn.Resource(rolloutsV1beta1).Namespace(ns).Get(ctx, "rollout", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			n, _, _ := unstructured.NestedInt64(obj.Object, "status", "canaryStatus", "canaryReplicas")
			ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "canaryStatus", "canaryReadyReplicas")
			return []int64{n, ready}
		}).WithContext(ctx).WithTimeout(10*time.Second).WithPolling(poll).Should(Equal([]int64{5, 5}),
			"canaryReplicas and canaryReadyReplicas count the new pods")

		By("approving again: all ten pods of version-2")
		approveRollout(ctx, ns, "rollout")
		waitRollout(ctx, ns, rolloutState{Phase: "Healthy", Step: 3, State: "Completed", Message: "workload deployment is completed"})
		waitPods(ctx, ns, podCounts{Updated: 10, Ready: 10})
		Expect(avail.Lowest()).To(BeNumerically(">=", 8), "never more unavailable pods than maxUnavailable (25%% of 10) allows")
		Expect(kstatusOf(ctx, ns)).To(Equal(kstatus.CurrentStatus))
		body := scrape(ctx, "http://"+manager.MetricsAddr+"/metrics")
		Expect(body).To(MatchRegexp(`flotilla_rollout_releases_total\{result="Success"\} [1-9]`))
		Expect(body).To(MatchRegexp(`flotilla_batchrelease_batches_ready_total [1-9]`))
		Expect(body).To(MatchRegexp(`flotilla_rollout_release_duration_seconds_count\{result="Success"\} [1-9]`))

		d := getDeployment(ctx, ns, "workload")
		Expect(d.Spec.Paused).To(BeFalse())
		Expect(d.Spec.Strategy.Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
		Expect(d.Annotations).NotTo(HaveKey("rollouts.kruise.io/in-progressing"))
		Expect(d.Annotations).NotTo(HaveKey("batchrelease.rollouts.kruise.io/control-info"))
		Expect(d.Annotations).NotTo(HaveKey("rollouts.kruise.io/deployment-strategy"))
		Eventually(func() error {
			_, err := dyn.Resource(batchReleases).Namespace(ns).Get(ctx, "rollout", metav1.GetOptions{})
			return err
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(MatchError(ContainSubstring("not found")))
	})
})
