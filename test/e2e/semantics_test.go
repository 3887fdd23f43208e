package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

// subStatus is the name of the Rollout's release status: canaryStatus, or blueGreenStatus.
func (s *story) subStatus(ctx context.Context) map[string]any {
	GinkgoHelper()
	st := s.status(ctx)
	for _, key := range []string{"canaryStatus", "blueGreenStatus"} {
		if sub, ok := st[key].(map[string]any); ok {
			return sub
		}
	}
	return nil
}

func (s *story) workloadGeneration(ctx context.Context) int64 {
	GinkgoHelper()
	var gen int64
	switch s.kind {
	case "Deployment":
		gen = getDeployment(ctx, s.ns, appName).Generation
	case "CloneSet":
		obj, err := dyn.Resource(cloneSets).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		gen = obj.GetGeneration()
	default:
		Fail("no generation reader for " + s.kind)
	}
	return gen
}

// expectGenerationObserved waits for observedWorkloadGeneration to reach the workload's generation, as the
// scripts written for upstream wait after each change they make.
func (s *story) expectGenerationObserved(ctx context.Context, why string) {
	GinkgoHelper()
	Eventually(func() bool {
		observed, _ := s.subStatus(ctx)["observedWorkloadGeneration"].(int64)
		return observed == s.workloadGeneration(ctx)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue(),
		"observedWorkloadGeneration after %s: %v (workload generation %d)", why, s.subStatus(ctx)["observedWorkloadGeneration"], s.workloadGeneration(ctx))
}

func (s *story) scaleDeployment(ctx context.Context, replicas int32) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	_, err := kube.AppsV1().Deployments(s.ns).Patch(ctx, appName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("Status and behaviour upstream's scripts rely on", func() {
	DescribeTable("keeps observedWorkloadGeneration at the workload's generation",
		func(ctx SpecContext, strategy, approve string) {
			s := newStory(ctx, "Deployment", 4)
			s.waitPods(ctx, map[string]int{"v1": 4})
			s.rollout(ctx, strategy)
			s.expectGenerationObserved(ctx, "the first Healthy")

			By("a release, completed")
			s.setVersion(ctx, "v2")
			s.waitStep(ctx, "Progressing 1/StepPaused")
			s.expectGenerationObserved(ctx, "a batch")
			s.statusPatch(ctx, approve)
			s.waitStep(ctx, "Progressing 2/StepPaused")
			s.statusPatch(ctx, approve)
			s.waitPhase(ctx, "Healthy")
			s.waitPods(ctx, map[string]int{"v2": 4})
			s.expectGenerationObserved(ctx, "the release completed and the Deployment resumed")

			By("a scale")
			s.scaleDeployment(ctx, 5)
			s.waitPods(ctx, map[string]int{"v2": 5})
			s.expectGenerationObserved(ctx, "a scale")

			By("a release rolled back")
			s.setVersion(ctx, "v3")
			s.waitStep(ctx, "Progressing 1/StepPaused")
			s.setVersion(ctx, "v2")
			s.waitPhase(ctx, "Healthy")
			s.waitPods(ctx, map[string]int{"v2": 5})
			s.expectGenerationObserved(ctx, "a rollback")
		},
		Entry("canaryStatus", "canary:\n  steps:\n  - replicas: 1\n  - replicas: 50%\n  - replicas: 100%",
			`{"status":{"canaryStatus":{"currentStepState":"StepReady"}}}`),
		Entry("blueGreenStatus", "blueGreen:\n  steps:\n  - replicas: 50%\n  - replicas: 100%",
			`{"status":{"blueGreenStatus":{"currentStepState":"StepReady"}}}`),
	)

	It("keeps observedWorkloadGeneration through a continuous release", func(ctx SpecContext) {
		s := newStory(ctx, "CloneSet", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 100%")
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.setVersion(ctx, "v3")
		Eventually(func() any { return s.subStatus(ctx)["canaryRevision"] }).WithContext(ctx).WithTimeout(time.Minute).
			WithPolling(poll).ShouldNot(Equal(s.subStatus(ctx)["stableRevision"]))
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.expectGenerationObserved(ctx, "a continuous release")
		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v3": 4})
		s.expectGenerationObserved(ctx, "the continuous release completed")
	})

	It("writes rollouts.kruise.io/hash and keeps status rolloutHash equal to it", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 2)
		s.waitPods(ctx, map[string]int{"v1": 2})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n  - replicas: 100%")
		hashes := func() [2]any {
			obj, err := dyn.Resource(rolloutsV1beta1).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			sub, _, _ := unstructured.NestedString(obj.Object, "status", "canaryStatus", "rolloutHash")
			return [2]any{obj.GetAnnotations()["rollouts.kruise.io/hash"], sub}
		}
		Eventually(func() bool { h := hashes(); return h[0] != nil && h[0] != "" && h[0] == h[1] }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue(), "annotation and status: %v", hashes())
		first := hashes()[0]

		By("a new step plan during a release")
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.specPatch(ctx, `{"spec":{"strategy":{"canary":{"steps":[{"replicas":2},{"replicas":"100%"}]}}}}`)
		Eventually(func() bool { h := hashes(); return h[0] != first && h[0] == h[1] }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue(), "annotation and status: %v", hashes())
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.waitPods(ctx, map[string]int{"v2": 2})

		By("a pause edit is no new plan")
		second := hashes()[0]
		s.specPatch(ctx, `{"spec":{"strategy":{"canary":{"steps":[{"replicas":2,"pause":{"duration":3600}},{"replicas":"100%"}]}}}}`)
		Consistently(func() any { return hashes()[0] }).WithContext(ctx).WithTimeout(2 * time.Second).Should(Equal(second))
	})

	It("takes a nextStepIndex written while a timed pause runs out", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 4)
		s.waitPods(ctx, map[string]int{"v1": 4})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 1\n    pause: {duration: 8}\n  - replicas: 50%\n  - replicas: 100%")
		s.setVersion(ctx, "v2")
		s.waitStep(ctx, "Progressing 1/StepPaused")
		paused := s.subStatus(ctx)["lastUpdateTime"]

		By("restarting step 1 a few seconds before its pause ends")
		time.Sleep(5 * time.Second)
		s.statusPatch(ctx, `{"status":{"canaryStatus":{"nextStepIndex":1}}}`)
		Eventually(func() any { return s.subStatus(ctx)["lastUpdateTime"] }).WithContext(ctx).WithTimeout(5*time.Second).
			WithPolling(poll).ShouldNot(Equal(paused), "the jump restarts the step")
		Consistently(func() string { return s.step(ctx) }).WithContext(ctx).WithTimeout(5*time.Second).WithPolling(poll).
			Should(Equal("Progressing 1/StepPaused"), "the first pause would have ended by now; the restarted one has not")

		By("jumping to the last step while the restarted pause runs out")
		s.statusPatch(ctx, `{"status":{"canaryStatus":{"nextStepIndex":3}}}`)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v2": 4})
		Expect(s.subStatus(ctx)["currentStepIndex"]).To(Equal(int64(3)))
	})

	It("accepts every Rollout upstream's webhook accepts, with a warning where a field does nothing", func(ctx SpecContext) {
		ns := newNamespace(ctx, "upstream-accepts-")
		root, err := cluster.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		raw, err := os.ReadFile(filepath.Join(root, "rollout/admission/testdata/upstream-accepts.yaml"))
		Expect(err).NotTo(HaveOccurred())
		client, warnings := warningClient()
		docs := strings.Split(string(raw), "\n---\n")
		Expect(len(docs)).To(BeNumerically(">=", 10))
		for _, doc := range docs {
			obj := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
			gvr := rolloutsV1beta1
			gvr.Version = strings.TrimPrefix(obj.GetAPIVersion(), "rollouts.kruise.io/")
			warnings.reset()
			_, err := client.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred(), obj.GetAnnotations()["test.flotilla.dev/case"])
			if n := obj.GetAnnotations()["test.flotilla.dev/warns"]; n != "" {
				Expect(warnings.seen()).To(HaveLen(1), obj.GetName())
			} else {
				Expect(warnings.seen()).To(BeEmpty(), obj.GetName())
			}
		}
	})
})

// warnings collects the admission warnings an API client receives.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = nil
}

func (w *warnings) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

func warningClient() (dynamic.Interface, *warnings) {
	GinkgoHelper()
	w := &warnings{}
	cfg := rest.CopyConfig(testCluster.Config())
	cfg.WarningHandler = w
	client, err := dynamic.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return client, w
}

// newDaemonSetStory is the app as a native DaemonSet on every node with the given rolling update.
func newDaemonSetStory(ctx context.Context, rollingUpdate string) *story {
	GinkgoHelper()
	s := newStory(ctx, "DaemonSet", 0)
	patch := fmt.Sprintf(`{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":%s}}}`, rollingUpdate)
	_, err := kube.AppsV1().DaemonSets(s.ns).Patch(ctx, appName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
	s.waitPods(ctx, map[string]int{"v1": 3})
	return s
}

var _ = Describe("Native DaemonSet releases", func() {
	DescribeTable("hold the DaemonSet from the template change, whatever its rolling update allows",
		func(ctx SpecContext, rollingUpdate string, first int, waitHealthy bool) {
			s := newDaemonSetStory(ctx, rollingUpdate)
			strategy := fmt.Sprintf("canary:\n  steps:\n  - replicas: %d\n  - replicas: 100%%", first)
			if waitHealthy {
				s.rollout(ctx, strategy)
			} else {
				s.rolloutNoWait(ctx, strategy)
			}
			w := watchAppPods(ctx, s.ns)
			s.setVersion(ctx, "v2")
			s.waitStep(ctx, "Progressing 1/StepPaused")
			want := map[string]int{"v1": 3 - first, "v2": first}
			s.waitPods(ctx, want)
			Consistently(func() map[string]int { return s.pods(ctx) }).WithContext(ctx).WithTimeout(3*time.Second).WithPolling(poll).
				Should(Equal(want), "the batch holds")
			Expect(w.created("v2")).To(Equal(first), "pods ever created on v2 before the approval")
			s.approve(ctx)
			s.waitPhase(ctx, "Healthy")
			s.waitPods(ctx, map[string]int{"v2": 3})
			s.expectReleased(ctx)
		},
		Entry("maxUnavailable 3, one pod in the first batch", `{"maxUnavailable":3}`, 1, true),
		Entry("maxUnavailable 3, two pods in the first batch", `{"maxUnavailable":3}`, 2, true),
		Entry("maxSurge 1 and maxUnavailable 0", `{"maxSurge":1,"maxUnavailable":0}`, 1, true),
		Entry("maxUnavailable 100%, the template changed right after the Rollout was created", `{"maxUnavailable":"100%"}`, 1, false),
	)
})

// replicaSetsByVersion counts the Deployment's pods by ReplicaSet version: spec.replicas of each.
func (s *story) replicaSetsByVersion(ctx context.Context) map[string]int32 {
	GinkgoHelper()
	rss, err := kube.AppsV1().ReplicaSets(s.ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	out := map[string]int32{}
	for _, rs := range rss.Items {
		if n := *rs.Spec.Replicas; n > 0 {
			out[versionOf(rs.Spec.Template.Spec.Containers[0])] += n
		}
	}
	return out
}

func (s *story) waitReplicaSets(ctx context.Context, want map[string]int32) {
	GinkgoHelper()
	Eventually(func() map[string]int32 { return s.replicaSetsByVersion(ctx) }).WithContext(ctx).WithTimeout(time.Minute).
		WithPolling(poll).Should(Equal(want), s.describe)
}

// setImage changes the app container's image and VERSION together.
func (s *story) setImage(ctx context.Context, image, version string) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q,"env":[{"name":"VERSION","value":%q}]}]}}}}`, image, version)
	_, err := kube.AppsV1().Deployments(s.ns).Patch(ctx, appName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("Partition-style Deployment releases", func() {
	DescribeTable("scale the ReplicaSets in proportion when the Deployment is scaled mid-release",
		func(ctx SpecContext, step string) {
			s := newStory(ctx, "Deployment", 5)
			s.waitPods(ctx, map[string]int{"v1": 5})
			s.rollout(ctx, "canary:\n  steps:\n  - replicas: "+step+"\n  - replicas: 100%")
			s.setVersion(ctx, "v2")
			s.waitStep(ctx, "Progressing 1/StepPaused")
			s.waitReplicaSets(ctx, map[string]int32{"v1": 3, "v2": 2})
			s.scaleDeployment(ctx, 10)
			s.waitReplicaSets(ctx, map[string]int32{"v1": 6, "v2": 4})
			s.waitPods(ctx, map[string]int{"v1": 6, "v2": 4})
			Consistently(func() map[string]int32 { return s.replicaSetsByVersion(ctx) }).WithContext(ctx).WithTimeout(2 * time.Second).
				WithPolling(poll).Should(Equal(map[string]int32{"v1": 6, "v2": 4}))
			By("and scaled back down")
			s.scaleDeployment(ctx, 5)
			s.waitReplicaSets(ctx, map[string]int32{"v1": 3, "v2": 2})
			s.approve(ctx)
			s.waitPhase(ctx, "Healthy")
			s.waitPods(ctx, map[string]int{"v2": 5})
		},
		Entry("an absolute step", "2"),
		Entry("a percentage step", "40%"),
	)

	It("holds a release whose new pods never become ready, and removes them first when a working version comes", func(ctx SpecContext) {
		s := newStory(ctx, "Deployment", 5)
		patch := `{"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1,"maxUnavailable":0}}}}`
		_, err := kube.AppsV1().Deployments(s.ns).Patch(ctx, appName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		s.waitPods(ctx, map[string]int{"v1": 5})
		s.rollout(ctx, "canary:\n  steps:\n  - replicas: 3\n  - replicas: 100%")
		w := watchAppPods(ctx, s.ns)

		By("releasing an image that cannot be pulled")
		s.setImage(ctx, "unpullable.invalid/app:2", "v2")
		held := func(g Gomega) {
			d := getDeployment(ctx, s.ns, appName)
			g.Expect([3]int32{d.Status.Replicas, d.Status.AvailableReplicas, d.Status.UpdatedReplicas}).To(Equal([3]int32{6, 5, 1}),
				"replicas, available, updated")
		}
		Eventually(held).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed(), s.describe)
		Consistently(held).WithContext(ctx).WithTimeout(3*time.Second).WithPolling(poll).Should(Succeed(), s.describe)

		By("releasing a version that works")
		s.setImage(ctx, "example.com/app:3", "v3")
		Eventually(func() int32 { return s.replicaSetsByVersion(ctx)["v2"] }).WithContext(ctx).WithTimeout(time.Minute).
			WithPolling(poll).Should(BeZero(), s.describe)
		s.waitStep(ctx, "Progressing 1/StepPaused")
		s.waitPods(ctx, map[string]int{"v1": 2, "v3": 3})
		w.expect(ctx, s.ns, 6, 5)
		s.approve(ctx)
		s.waitPhase(ctx, "Healthy")
		s.waitPods(ctx, map[string]int{"v3": 5})
	})
})
