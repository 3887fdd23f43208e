package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/nodeagent/cri/critest"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

type (
	crr      = kruiseappsv1alpha1.ContainerRecreateRequest
	crrState = kruiseappsv1alpha1.ContainerRecreateRequestContainerRecreateState
)

var crrResource = kruiseappsv1alpha1.GroupVersion.WithResource("containerrecreaterequests")

const (
	// crrApp names the CloneSet and is its pods' app label; the pod's containers are "app" and "sidecar".
	crrApp = "web"
	// podGrace is the pod's terminationGracePeriodSeconds, which a request without its own uses.
	podGrace = 5
	// agentController is the reporting controller of the node agent's events.
	agentController = "containerrecreaterequest-nodeagent"
	crrTimeout      = time.Minute
)

// crrStory is the one pod of a 1-replica CloneSet on a kwok node. Once runNode has run, the pod's
// containers also run in an in-process container runtime, with the runtime's IDs in the pod's status as a
// kubelet reports them, and flotilla-nodeagent runs for the pod's node against that runtime. The test
// plays the kubelet for restarts.
type crrStory struct {
	ns  string
	pod corev1.Pod
	rt  *critest.Runtime
	// ids are the runtime IDs of the containers the pod's status reports, by name.
	ids map[string]string
}

func newCRRStory(ctx context.Context, preStop []string) *crrStory {
	GinkgoHelper()
	s := &crrStory{ns: newNamespace(ctx, "crr-"), ids: map[string]string{}}
	createCRRCloneSet(ctx, s.ns, crrTemplate(preStop))
	s.pod = waitCRRPod(ctx, s.ns)
	return s
}

// crrTemplate has the containers app (with an exec preStop handler when preStop is set) and sidecar.
func crrTemplate(preStop []string) corev1.PodTemplateSpec {
	app := corev1.Container{Name: "app", Image: "example.com/app:1"}
	if preStop != nil {
		app.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: preStop}}}
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": crrApp}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](podGrace),
			Containers: []corev1.Container{app, {Name: "sidecar", Image: "example.com/sidecar:1"}}},
	}
}

func createCRRCloneSet(ctx context.Context, ns string, tmpl corev1.PodTemplateSpec) {
	GinkgoHelper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
	Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{"name": crrApp, "namespace": ns},
		"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": crrApp}},
			"template": u},
	}}
	_, err = dyn.Resource(cloneSets).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// waitCRRPod waits for the CloneSet's pod to run and be Ready with both containers started.
func waitCRRPod(ctx context.Context, ns string) corev1.Pod {
	GinkgoHelper()
	var pod corev1.Pod
	Eventually(func() bool {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + crrApp})
		if err != nil || len(list.Items) != 1 {
			return false
		}
		pod = list.Items[0]
		return pod.Status.Phase == corev1.PodRunning && podReady(pod) && len(pod.Status.ContainerStatuses) == 2
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(poll).Should(BeTrue(), "a Ready pod of CloneSet %s", crrApp)
	return pod
}

// runNode starts the runtime with the pod's containers in it and the node agent of the pod's node; exec,
// when set, answers the commands the agent runs in the containers.
func (s *crrStory) runNode(ctx context.Context, exec ...critest.ExecFunc) {
	GinkgoHelper()
	s.rt = critest.Start(GinkgoT())
	for _, f := range exec {
		s.rt.OnExec(f)
	}
	ref := critest.Pod{Namespace: s.ns, Name: s.pod.Name, UID: string(s.pod.UID)}
	for _, cs := range s.pod.Status.ContainerStatuses {
		id := s.rt.Run(ref, cs.Name)
		s.ids[cs.Name] = id
		s.setContainerStatus(ctx, cs.Name, func(cs *corev1.ContainerStatus) { cs.ContainerID = "containerd://" + id })
	}
	startNodeAgent(ctx, s.pod.Spec.NodeName, s.rt.Endpoint)
}

// startNodeAgent runs flotilla-nodeagent, built from this checkout, for node until the spec ends; a failed spec shows the end of
// its log and keeps the whole.
func startNodeAgent(ctx context.Context, node, endpoint string) {
	GinkgoHelper()
	dir, err := os.MkdirTemp("", "flotilla-nodeagent-")
	failOnError(err, "creating the node agent's directory")
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Printf("kept %s\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	a, err := framework.StartNodeAgent(ctx, framework.NodeAgentConfig{
		Binary: binaryOf(ctx, "./nodeagent/cmd/nodeagent", "flotilla-nodeagent"), NodeName: node, CRIEndpoint: endpoint,
		KubeconfigPath: testCluster.KubeconfigPath(), WorkDir: dir, ExtraArgs: []string{"--zap-log-level=debug"},
	})
	failOnError(err, "starting flotilla-nodeagent")
	DeferCleanup(func() {
		a.Stop()
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Printf("last lines of %s:\n%s\n", a.LogPath, a.LogTail(80))
		}
	})
}

// setContainerStatus changes the status of one of the pod's containers, as its kubelet would.
func (s *crrStory) setContainerStatus(ctx context.Context, name string, change func(*corev1.ContainerStatus)) {
	GinkgoHelper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := kube.CoreV1().Pods(s.ns).Get(ctx, s.pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range pod.Status.ContainerStatuses {
			if pod.Status.ContainerStatuses[i].Name == name {
				change(&pod.Status.ContainerStatuses[i])
			}
		}
		_, err = kube.CoreV1().Pods(s.ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
	Expect(err).NotTo(HaveOccurred(), "updating the status of container %s", name)
}

// waitStopped waits until the agent stopped the container id and returns every stop the runtime received.
func (s *crrStory) waitStopped(ctx context.Context, id string) []critest.Stop {
	GinkgoHelper()
	Eventually(func() bool { return s.rt.Running(id) }).WithContext(ctx).WithTimeout(crrTimeout).WithPolling(poll).
		Should(BeFalse(), "the node agent stopping container %s", id)
	return s.rt.Stops()
}

// restart plays the kubelet restarting a stopped container: a new container in the runtime, and the pod's
// status reporting it running and ready with one more restart.
func (s *crrStory) restart(ctx context.Context, name string) string {
	GinkgoHelper()
	id, err := s.rt.Restart(string(s.pod.UID), name)
	Expect(err).NotTo(HaveOccurred())
	now := metav1.Now()
	s.setContainerStatus(ctx, name, func(cs *corev1.ContainerStatus) {
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Reason: "Completed", ContainerID: cs.ContainerID, FinishedAt: now}}
		cs.ContainerID, cs.RestartCount = "containerd://"+id, cs.RestartCount+1
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		cs.Ready, cs.Started = true, ptr.To(true)
	})
	s.ids[name] = id
	return id
}

func (s *crrStory) request(ctx context.Context, name string) *crr {
	GinkgoHelper()
	u, err := dyn.Resource(crrResource).Namespace(s.ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	out := &crr{}
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)).To(Succeed())
	return out
}

// waitCompleted waits for the request's phase Completed and then for the manager to drop its active label.
func (s *crrStory) waitCompleted(ctx context.Context, name string) *crr {
	GinkgoHelper()
	var c *crr
	Eventually(func() kruiseappsv1alpha1.ContainerRecreateRequestPhase {
		c = s.request(ctx, name)
		return c.Status.Phase
	}).WithContext(ctx).WithTimeout(crrTimeout).WithPolling(poll).Should(Equal(kruiseappsv1alpha1.ContainerRecreateRequestCompleted))
	Eventually(func() map[string]string { return s.request(ctx, name).Labels }).WithContext(ctx).WithTimeout(crrTimeout).
		WithPolling(poll).ShouldNot(HaveKey(kruiseappsv1alpha1.ContainerRecreateRequestActiveKey), "the active label removed")
	return c
}

// agentEvents are the notes of the node agent's events on the request, by reason.
func (s *crrStory) agentEvents(ctx context.Context, name string) map[string]string {
	GinkgoHelper()
	list, err := kube.EventsV1().Events(s.ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, e := range list.Items {
		if e.Regarding.Kind == "ContainerRecreateRequest" && e.Regarding.Name == name && e.ReportingController == agentController {
			out[e.Reason] = e.Note
		}
	}
	return out
}

// killedAt waits for the node agent's event about stopping a container of the request and returns when
// the agent recorded it.
func (s *crrStory) killedAt(ctx context.Context, name string) time.Time {
	GinkgoHelper()
	var at time.Time
	Eventually(func() bool {
		list, err := kube.EventsV1().Events(s.ns).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == "Killing" && e.ReportingController == agentController {
				at = e.EventTime.Time
				return true
			}
		}
		return false
	}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(poll).Should(BeTrue(), "a Killing event on %s", name)
	return at
}

// waitStates waits for the request's container states.
func (s *crrStory) waitStates(ctx context.Context, name string, want ...crrState) {
	GinkgoHelper()
	Eventually(func() []crrState { return s.request(ctx, name).Status.ContainerRecreateStates }).WithContext(ctx).
		WithTimeout(30 * time.Second).WithPolling(poll).Should(Equal(want))
}

func (s *crrStory) getPod(ctx context.Context) *corev1.Pod {
	GinkgoHelper()
	pod, err := kube.CoreV1().Pods(s.ns).Get(ctx, s.pod.Name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return pod
}

// kubectlCreate creates the objects of a manifest with kubectl, as a user applying a file.
func kubectlCreate(ctx context.Context, manifest string) (string, error) {
	path := filepath.Join(GinkgoT().TempDir(), "manifest.yaml")
	Expect(os.WriteFile(path, []byte(manifest), 0o600)).To(Succeed())
	out, err := testCluster.Kubectl(ctx, "create", "-f", path)
	return string(out), err
}

// crrManifest is a request for the containers of pod, in the form upstream's documentation gives.
func crrManifest(ns, name, pod, strategy string, containers ...string) string {
	doc := fmt.Sprintf("apiVersion: apps.kruise.io/v1alpha1\nkind: ContainerRecreateRequest\nmetadata:\n  name: %s\n  namespace: %s\n"+
		"spec:\n  podName: %s\n  containers:\n", name, ns, pod)
	for _, c := range containers {
		doc += "  - name: " + c + "\n"
	}
	return doc + "  strategy:\n" + indent(strategy, 4) + "  activeDeadlineSeconds: 300\n  ttlSecondsAfterFinished: 1800\n"
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

const kruisePodReady corev1.PodConditionType = "KruisePodReady"

var _ = Describe("ContainerRecreateRequest", func() {
	const name = "restart-app"

	It("restarts one container of a pod through the node agent, created with kubectl kruise", func(ctx SpecContext) {
		// The plugin, as upstream's, sends the container's preStop handler and ports along with its name.
		hook := []string{"/bin/sh", "-c", "sleep 1"}
		s := newCRRStory(ctx, hook)
		s.runNode(ctx)
		old, sidecar := s.ids["app"], s.ids["sidecar"]

		out, code := kruise(ctx, binaryOf(ctx, "./rollout/cmd/kubectl-kruise", "kubectl-kruise"), s.ns,
			"create", "containerrecreaterequest", name, "--pod="+s.pod.Name, "--containers=app")
		Expect(code).To(Equal(0), "%s", out)
		Expect(out).To(ContainSubstring("containerrecreaterequest.apps.kruise.io/" + name + " created"))

		By("the manager's webhook filling the request from the pod")
		c := s.request(ctx, name)
		Expect(c.Labels).To(HaveKeyWithValue(kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey, string(s.pod.UID)))
		Expect(c.Labels).To(HaveKeyWithValue(kruiseappsv1alpha1.ContainerRecreateRequestNodeNameKey, s.pod.Spec.NodeName))
		Expect(c.Labels).To(HaveKeyWithValue(kruiseappsv1alpha1.ContainerRecreateRequestActiveKey, "true"))
		Expect(c.Spec.Strategy.FailurePolicy).To(Equal(kruiseappsv1alpha1.ContainerRecreateRequestFailurePolicyFail))
		Expect(c.Spec.Strategy.TerminationGracePeriodSeconds).To(HaveValue(BeEquivalentTo(podGrace)), "the pod's grace period")
		Expect(c.Spec.Containers).To(HaveLen(1))
		Expect(c.Spec.Containers[0].StatusContext).To(Equal(&kruiseappsv1alpha1.ContainerRecreateRequestContainerContext{
			ContainerID: "containerd://" + old, RestartCount: 0}))
		Expect(c.Spec.Containers[0].PreStop).To(Equal(&kruiseappsv1alpha1.ProbeHandler{Exec: &corev1.ExecAction{Command: hook}}))

		By("the node agent running the preStop handler, then stopping the container with the pod's grace period, and only that one")
		Expect(s.waitStopped(ctx, old)).To(Equal([]critest.Stop{{ContainerID: old, GraceSeconds: podGrace}}))
		Expect(s.rt.Execs()).To(Equal([]critest.Exec{{ContainerID: old, Cmd: hook}}))
		Expect(s.rt.Running(sidecar)).To(BeTrue(), "the sidecar keeps running")
		s.waitStates(ctx, name, crrState{Name: "app", Phase: kruiseappsv1alpha1.ContainerRecreateRequestRecreating, IsKilled: true})

		By("the kubelet starting the container again")
		restarted := s.restart(ctx, "app")
		c = s.waitCompleted(ctx, name)
		Expect(c.Status.ContainerRecreateStates).To(Equal([]crrState{
			{Name: "app", Phase: kruiseappsv1alpha1.ContainerRecreateRequestSucceeded, IsKilled: true}}))
		Expect(c.Status.CompletionTime).NotTo(BeNil())
		Expect(c.Status.Message).To(BeEmpty())
		var synced []kruiseappsv1alpha1.ContainerRecreateRequestSyncContainerStatus
		Expect(json.Unmarshal([]byte(c.Annotations[kruiseappsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey]), &synced)).To(Succeed())
		Expect(synced).To(Equal([]kruiseappsv1alpha1.ContainerRecreateRequestSyncContainerStatus{
			{Name: "app", Ready: true, RestartCount: 1, ContainerID: "containerd://" + restarted}}), "the pod's status as the manager copied it")
		Expect(s.rt.Stops()).To(HaveLen(1), "no other stop")

		Eventually(func() map[string]string { return s.agentEvents(ctx, name) }).WithContext(ctx).WithTimeout(30 * time.Second).
			WithPolling(poll).Should(And(
			HaveKeyWithValue("Killing", fmt.Sprintf("Stopped container app (%s) with a grace period of %ds", old[:12], podGrace)),
			HaveKeyWithValue("Completed", "Recreated all containers")))
	})

	It("holds the pod not ready for unreadyGracePeriodSeconds before it stops anything", func(ctx SpecContext) {
		hook := []string{"/bin/sh", "-c", "drain"}
		s := newCRRStory(ctx, hook)
		s.runNode(ctx)
		old := s.ids["app"]
		out, err := kubectlCreate(ctx, crrManifest(s.ns, name, s.pod.Name,
			"failurePolicy: Fail\nunreadyGracePeriodSeconds: 3\nminStartedSeconds: 3\n", "app"))
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring(name + " created"))
		Expect(s.request(ctx, name).Spec.Containers[0].PreStop).To(Equal(&kruiseappsv1alpha1.ProbeHandler{
			Exec: &corev1.ExecAction{Command: hook}}), "the pod's preStop handler, copied by the webhook")

		By("the manager holding the pod not ready, and the agent waiting out the grace period")
		var acquired time.Time
		Eventually(func() error {
			var err error
			acquired, err = time.Parse(time.RFC3339, s.request(ctx, name).Annotations[kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey])
			return err
		}).WithContext(ctx).WithTimeout(crrTimeout).WithPolling(poll/5).Should(Succeed(), "the unready-acquired annotation")
		// The annotation has whole seconds and was written at or after the time it says.
		if wait := time.Until(acquired.Add(3*time.Second - 200*time.Millisecond)); wait > 0 {
			Consistently(s.rt.Stops).WithContext(ctx).WithTimeout(wait).WithPolling(poll/5).Should(BeEmpty(),
				"nothing stopped within the grace period")
		}
		Expect(s.waitStopped(ctx, old)).To(Equal([]critest.Stop{{ContainerID: old, GraceSeconds: podGrace}}))
		Expect(s.rt.Execs()).To(Equal([]critest.Exec{{ContainerID: old, Cmd: hook}}), "the preStop handler ran")
		Expect(s.killedAt(ctx, name)).To(BeTemporally(">=", acquired.Add(3*time.Second)))

		pod := s.getPod(ctx)
		held := podCondition(pod, kruisePodReady)
		Expect(held.Status).To(Equal(corev1.ConditionFalse))
		Expect(held.Message).To(MatchJSON(fmt.Sprintf(`[{"userAgent":"ContainerRecreateRequest","key":"%s/%s"}]`, s.ns, name)))
		// The simulated kubelet recomputes Ready from the gates on its own time.
		Eventually(func() bool { return podReady(*s.getPod(ctx)) }).WithContext(ctx).WithTimeout(crrTimeout).WithPolling(poll).
			Should(BeFalse(), "a held pod is not Ready")
		Expect(s.request(ctx, name).Finalizers).To(ContainElement(kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey))

		By("the kubelet starting the container again, and the pod released")
		s.restart(ctx, "app")
		c := s.waitCompleted(ctx, name)
		Expect(c.Status.ContainerRecreateStates).To(Equal([]crrState{
			{Name: "app", Phase: kruiseappsv1alpha1.ContainerRecreateRequestSucceeded, IsKilled: true}}))
		Eventually(func() []corev1.ConditionStatus {
			pod := s.getPod(ctx)
			return []corev1.ConditionStatus{podCondition(pod, kruisePodReady).Status, podCondition(pod, corev1.PodReady).Status}
		}).WithContext(ctx).WithTimeout(crrTimeout).WithPolling(poll).Should(Equal([]corev1.ConditionStatus{"True", "True"}),
			"KruisePodReady and Ready")
		Expect(podCondition(s.getPod(ctx), kruisePodReady).Message).To(BeEmpty(), "no holder left")
		Eventually(func() []string { return s.request(ctx, name).Finalizers }).WithContext(ctx).WithTimeout(crrTimeout).
			WithPolling(poll).ShouldNot(ContainElement(kruiseappsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey))
	})

	It("rejects a request naming a container the pod does not have", func(ctx SpecContext) {
		s := newCRRStory(ctx, nil)
		out, err := kubectlCreate(ctx, crrManifest(s.ns, name, s.pod.Name, "failurePolicy: Fail\n", "nope"))
		Expect(err).To(HaveOccurred(), "%s", out)
		Expect(out).To(ContainSubstring("spec.containers[0].name"))
		Expect(out).To(ContainSubstring(`"nope"`))
		_, err = dyn.Resource(crrResource).Namespace(s.ns).Get(ctx, name, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing created: %v", err)
	})
})
