package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/flotilla-dev/flotilla/test/cluster"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// The BroadcastJob stories run on a pool of 10 kwok nodes of their own, labelled and tainted so that only the
// stories' jobs (which select and tolerate them) run there and the other specs never see them.
const (
	bcjPoolLabel = "e2e.flotilla.dev/bcj-pool"
	bcjPoolNodes = 10
	// bcjName is the seed's BroadcastJob.
	bcjName = "bcj"
	// bcjRunFor keeps a pod running that long before kwok completes it (test/cluster/stages/pod-complete.yaml).
	bcjRunFor = "pod-complete.stage.kwok.x-k8s.io/delay"
)

var (
	broadcastJobs        = kruiseappsv1alpha1.GroupVersion.WithResource("broadcastjobs")
	broadcastJobsV1beta1 = schema.GroupVersionResource{Group: appsGroup, Version: "v1beta1", Resource: "broadcastjobs"}
)

func bcjPoolNodeName(i int) string { return fmt.Sprintf("bcj-pool-%d", i) }

// addBCJPoolNode creates kwok node i of the pool (kwok makes it Ready, as every node annotated as kwok's) and
// waits until it is Ready.
func addBCJPoolNode(ctx context.Context, i int) {
	GinkgoHelper()
	node := cluster.KwokNode(bcjPoolNodeName(i), 200+i, 0)
	node.Labels[bcjPoolLabel] = "true"
	node.Spec.Taints = []corev1.Taint{{Key: bcjPoolLabel, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	_, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() bool {
		n, err := kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		return err == nil && nodeIsReady(n)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue(), "node %s Ready", node.Name)
}

// applyPoolJob creates a seed BroadcastJob in ns, placed on the pool's nodes, its pods running for runFor,
// after change.
func applyPoolJob(ctx context.Context, file, ns, runFor string, change func(spec map[string]any)) {
	GinkgoHelper()
	Expect(createPoolJob(ctx, broadcastJobs, file, ns, runFor, change)).To(Succeed())
}

// createPoolJob is applyPoolJob in the API version of gvr, returning the API server's answer.
func createPoolJob(ctx context.Context, gvr schema.GroupVersionResource, file, ns, runFor string, change func(spec map[string]any)) error {
	obj := seedObject(file)
	obj.SetAPIVersion(gvr.GroupVersion().String())
	obj.SetNamespace(ns)
	spec := obj.Object["spec"].(map[string]any)
	tmpl := spec["template"].(map[string]any)
	tmpl["metadata"] = map[string]any{"labels": map[string]any{"app": bcjName}, "annotations": map[string]any{bcjRunFor: runFor}}
	podSpec := tmpl["spec"].(map[string]any)
	podSpec["nodeSelector"] = map[string]any{bcjPoolLabel: "true"}
	podSpec["tolerations"] = []any{map[string]any{"key": bcjPoolLabel, "operator": "Exists", "effect": "NoSchedule"}}
	podSpec["terminationGracePeriodSeconds"] = int64(0)
	if change != nil {
		change(spec)
	}
	_, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	return err
}

func readBCJ(ctx context.Context, ns string) (*kruiseappsv1alpha1.BroadcastJob, error) {
	obj, err := dyn.Resource(broadcastJobs).Namespace(ns).Get(ctx, bcjName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	job := &kruiseappsv1alpha1.BroadcastJob{}
	return job, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, job)
}

// waitBCJPhase waits until the job's status shows phase and returns the status.
func waitBCJPhase(ctx context.Context, ns string, phase kruiseappsv1alpha1.BroadcastJobPhase, within time.Duration) kruiseappsv1alpha1.BroadcastJobStatus {
	GinkgoHelper()
	var st kruiseappsv1alpha1.BroadcastJobStatus
	Eventually(func() (kruiseappsv1alpha1.BroadcastJobPhase, error) {
		job, err := readBCJ(ctx, ns)
		if err != nil {
			return "", err
		}
		st = job.Status
		return st.Phase, nil
	}).WithContext(ctx).WithTimeout(within).WithPolling(poll).Should(Equal(phase), "BroadcastJob %s/%s: %+v", ns, bcjName, &st)
	return st
}

// bcjPods are the job's pods.
func bcjPods(ctx context.Context, ns string) []corev1.Pod {
	GinkgoHelper()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "broadcastjob-name=" + bcjName})
	Expect(err).NotTo(HaveOccurred())
	return list.Items
}

func podEnded(p corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// activeWatch follows every change to the job's pods (a watch, not samples, so no brief extra pod slips
// between two looks) until stopped, and keeps the most running at once.
type activeWatch struct {
	mu   sync.Mutex
	most int
	stop context.CancelFunc
	done chan struct{}
}

func watchActivePods(ctx context.Context, ns string) *activeWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &activeWatch{stop: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		running := map[string]bool{}
		rv := ""
		for ctx.Err() == nil {
			opts := metav1.ListOptions{LabelSelector: "broadcastjob-name=" + bcjName, ResourceVersion: rv}
			watcher, err := kube.CoreV1().Pods(ns).Watch(ctx, opts)
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			rv = w.follow(watcher, running, rv)
			watcher.Stop()
		}
	}()
	return w
}

// follow counts the pods running after each event until the watch ends, and returns the resource version to
// resume from ("" after an error, such as a version too old: the next watch starts from a fresh list).
func (w *activeWatch) follow(watcher watch.Interface, running map[string]bool, rv string) string {
	for ev := range watcher.ResultChan() {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			clear(running)
			return ""
		}
		rv = pod.ResourceVersion
		running[pod.Name] = ev.Type != watch.Deleted && pod.DeletionTimestamp == nil && !podEnded(*pod)
		n := 0
		for _, r := range running {
			if r {
				n++
			}
		}
		w.mu.Lock()
		w.most = max(w.most, n)
		w.mu.Unlock()
	}
	return rv
}

func (w *activeWatch) peak() int {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.most
}

// bcjEvents are the notes of the job's events of reason, all from upstream's broadcastjob-controller.
func bcjEvents(ctx context.Context, ns, reason string) []string {
	GinkgoHelper()
	list, err := kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "BroadcastJob" && e.Regarding.Name == bcjName && e.Reason == reason {
			Expect(e.ReportingController).To(Equal("broadcastjob-controller"))
			notes = append(notes, e.Note)
		}
	}
	return notes
}

var _ = Describe("BroadcastJob stories", Serial, Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		DeferCleanup(func(ctx SpecContext) {
			for i := range bcjPoolNodes {
				err := kube.CoreV1().Nodes().Delete(ctx, bcjPoolNodeName(i), metav1.DeleteOptions{})
				if !apierrors.IsNotFound(err) {
					Expect(err).NotTo(HaveOccurred())
				}
			}
		})
		for i := range bcjPoolNodes {
			addBCJPoolNode(ctx, i)
		}
	})

	It("runs the seed's job on 10 nodes with parallelism 3, never more than 3 pods at once", func(ctx SpecContext) {
		ns := newNamespace(ctx, "bcj-parallel-")
		w := watchActivePods(ctx, ns)
		applyPoolJob(ctx, "023-broadcastjob-bcj.yaml", ns, "1s", func(spec map[string]any) { spec["parallelism"] = int64(3) })
		st := waitBCJPhase(ctx, ns, kruiseappsv1alpha1.PhaseCompleted, 2*time.Minute)
		peak := w.peak()
		Expect(peak).To(BeNumerically("<=", 3), "pods running at once")
		Expect(peak).To(BeNumerically(">", 1), "parallelism let more than one pod run at once")
		Expect([]int32{st.Desired, st.Active, st.Succeeded, st.Failed}).To(Equal([]int32{10, 0, 10, 0}))
		Expect(st.Conditions).To(ContainElement(And(
			HaveField("Type", kruiseappsv1alpha1.JobComplete), HaveField("Status", corev1.ConditionTrue),
			HaveField("Message", "Job completed, 10 pods succeeded, 0 pods failed"))))
		nodes := map[string]bool{}
		for _, p := range bcjPods(ctx, ns) {
			Expect(p.Name).To(HavePrefix(bcjName + "-"))
			Expect(p.Spec.NodeName).To(HavePrefix("bcj-pool-"))
			nodes[p.Spec.NodeName] = true
		}
		Expect(nodes).To(HaveLen(bcjPoolNodes), "one pod per node")
		Expect(kubectlGet(ctx, ns, "bcj")).To(HaveExactElements(
			MatchRegexp(`^NAME\s+DESIRED\s+ACTIVE\s+SUCCEEDED\s+FAILED\s+AGE$`), MatchRegexp(`^bcj\s+10\s+0\s+10\s+0\s+\S+$`)))
		expectEvents(ctx, func() []string { return bcjEvents(ctx, ns, "JobComplete") }, ConsistOf(
			fmt.Sprintf("Job %s/bcj is completed, 10 pods succeeded, 0 pods failed", ns)))
	})

	It("fails the seed's job after activeDeadlineSeconds: 20, deletes its running pods, and deletes it 10 s later", func(ctx SpecContext) {
		ns := newNamespace(ctx, "bcj-deadline-")
		applyPoolJob(ctx, "024-broadcastjob-bcj.yaml", ns, "1h", nil)
		created := time.Now()
		Eventually(func() int { return len(bcjPods(ctx, ns)) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).
			Should(Equal(bcjPoolNodes))
		st := waitBCJPhase(ctx, ns, kruiseappsv1alpha1.PhaseFailed, time.Minute)
		failedAt := time.Now()
		Expect(failedAt.Sub(created)).To(BeNumerically(">=", 19*time.Second), "failed before its deadline")
		Expect([]int32{st.Desired, st.Active, st.Succeeded, st.Failed}).To(Equal([]int32{10, 0, 0, 10}))
		Expect(st.Conditions).To(ContainElement(And(HaveField("Type", kruiseappsv1alpha1.JobFailed),
			HaveField("Message", fmt.Sprintf("Job %s/bcj was active longer than specified deadline", ns)))))
		Eventually(func() []corev1.Pod {
			var live []corev1.Pod
			for _, p := range bcjPods(ctx, ns) {
				if p.DeletionTimestamp == nil && !podEnded(p) {
					live = append(live, p)
				}
			}
			return live
		}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(poll).Should(BeEmpty(), "running pods after the deadline")
		Eventually(func() bool {
			_, err := readBCJ(ctx, ns)
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue(), "the job deleted after its TTL")
		Expect(time.Since(failedAt)).To(BeNumerically(">=", 8*time.Second), "deleted before ttlSecondsAfterFinished")
		expectEvents(ctx, func() []string { return bcjEvents(ctx, ns, "DeadlineExceeded") }, HaveLen(1))
	})

	It("serves v1beta1 (upstream 1.9): validated and defaulted as v1alpha1, runs on every node, reads the same in both", func(ctx SpecContext) {
		ns := newNamespace(ctx, "bcj-v1beta1-")
		err := createPoolJob(ctx, broadcastJobsV1beta1, "023-broadcastjob-bcj.yaml", ns, "0s", func(spec map[string]any) {
			spec["template"].(map[string]any)["spec"].(map[string]any)["restartPolicy"] = "Always"
		})
		Expect(err).To(MatchError(ContainSubstring("spec.template.spec.restartPolicy")), "the validating webhook sees v1beta1 objects")

		Expect(createPoolJob(ctx, broadcastJobsV1beta1, "023-broadcastjob-bcj.yaml", ns, "0s", nil)).To(Succeed())
		st := waitBCJPhase(ctx, ns, kruiseappsv1alpha1.PhaseCompleted, 2*time.Minute)
		Expect([]int32{st.Desired, st.Succeeded, st.Failed}).To(Equal([]int32{bcjPoolNodes, bcjPoolNodes, 0}))
		stored, err := dyn.Resource(broadcastJobs).Namespace(ns).Get(ctx, bcjName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		served, err := dyn.Resource(broadcastJobsV1beta1).Namespace(ns).Get(ctx, bcjName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(served.GetAPIVersion()).To(Equal(appsGroup + "/v1beta1"))
		Expect(served.Object["spec"]).To(Equal(stored.Object["spec"]))
		Expect(served.Object["status"]).To(Equal(stored.Object["status"]))
		Expect(stored.Object["spec"]).To(HaveKeyWithValue("completionPolicy", HaveKeyWithValue("type", "Always")), "defaulted")
		Expect(kubectlGet(ctx, ns, "broadcastjobs.v1beta1.apps.kruise.io")).To(HaveExactElements(
			MatchRegexp(`^NAME\s+DESIRED\s+ACTIVE\s+SUCCEEDED\s+FAILED\s+AGE$`), MatchRegexp(`^bcj\s+10\s+0\s+10\s+0\s+\S+$`)))
	})

	It("deletes a completed job once ttlSecondsAfterFinished has passed", func(ctx SpecContext) {
		ns := newNamespace(ctx, "bcj-ttl-")
		applyPoolJob(ctx, "023-broadcastjob-bcj.yaml", ns, "0s", func(spec map[string]any) {
			spec["completionPolicy"] = map[string]any{"type": "Always", "ttlSecondsAfterFinished": int64(3)}
		})
		Eventually(func() bool {
			_, err := readBCJ(ctx, ns)
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(BeTrue(), "the completed job deleted")
		expectEvents(ctx, func() []string { return bcjEvents(ctx, ns, "JobComplete") }, HaveLen(1))
	})

	for _, tc := range []struct {
		policy  string
		phase   kruiseappsv1alpha1.BroadcastJobPhase
		failed  int32
		event   string
		pods    int
		summary string
	}{
		{"FailFast", kruiseappsv1alpha1.PhaseFailed, 1, "FailedPodFound", 1, "stops at the first failed pod"},
		{"Continue", kruiseappsv1alpha1.PhaseCompleted, bcjPoolNodes, "JobComplete", bcjPoolNodes, "runs every node despite failures"},
	} {
		It(fmt.Sprintf("with failurePolicy %s %s", tc.policy, tc.summary), func(ctx SpecContext) {
			ns := newNamespace(ctx, "bcj-"+strings.ToLower(tc.policy)+"-")
			applyPoolJob(ctx, "023-broadcastjob-bcj.yaml", ns, "0s", func(spec map[string]any) {
				spec["parallelism"] = int64(1)
				spec["failurePolicy"] = map[string]any{"type": tc.policy}
				container := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
				container["image"] = "fail.invalid/busybox:latest"
			})
			st := waitBCJPhase(ctx, ns, tc.phase, 2*time.Minute)
			Expect([]int32{st.Desired, st.Succeeded, st.Failed}).To(Equal([]int32{bcjPoolNodes, 0, tc.failed}))
			Expect(bcjPods(ctx, ns)).To(HaveLen(tc.pods))
			Eventually(func() []string { return bcjEvents(ctx, ns, tc.event) }).WithContext(ctx).WithTimeout(10 * time.Second).
				WithPolling(poll).Should(HaveLen(1))
		})
	}
})
