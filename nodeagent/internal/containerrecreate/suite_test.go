package containerrecreate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/cri/critest"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// The node agent needs only the API server: no kubelet, scheduler or controllers. Pods are bound to node
// names by the tests and their statuses written by the tests, which play the kubelet together with the
// critest runtime, and the manager's CRR webhook and controller.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &clusterConfig))
}

func testScheme(t *testing.T) *runtime.Scheme {
	return managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme)
}

// world is one test's node: an agent for a node name of its own, the in-memory runtime it talks to, and a
// namespace.
type world struct {
	t    *testing.T
	c    client.Client
	rt   *critest.Runtime
	node string
	ns   string
}

var counter atomic.Int32

// startAgent runs the executor for a fresh node in-process until the test ends.
func startAgent(t *testing.T) *world {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	w := &world{t: t, rt: critest.Start(t), node: fmt.Sprintf("node-%d", counter.Add(1))}
	scheme := testScheme(t)
	w.c = managertest.DirectClient(t, clusterConfig, scheme)
	rt := w.rt.Dial(t)
	managertest.Start(t, clusterConfig, scheme, (&Reconciler{NodeName: w.node, Runtime: rt}).SetupWithManager,
		func(o *ctrl.Options) { o.Cache = cache.Options{ByObject: CacheByObject(w.node)} })
	w.ns = managertest.NamespaceWithServiceAccount(t, w.c, "crr")
	return w
}

// runPod creates a running pod on node with one container per name (mutate may add to the spec), started
// in the runtime, and reports them in the pod's status as the kubelet would.
func (w *world) runPod(name, node string, graceSeconds int64, containers []string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	w.t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &graceSeconds, AutomountServiceAccountToken: ptr.To(false)}}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "busybox"})
	}
	for _, m := range mutate {
		m(pod)
	}
	if err := w.c.Create(w.t.Context(), pod); err != nil {
		w.t.Fatal(err)
	}
	ref := critest.Pod{Namespace: w.ns, Name: name, UID: string(pod.UID)}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.5", PodIPs: []corev1.PodIP{{IP: "10.0.0.5"}}}
	for _, c := range containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, containerStatus(c, w.rt.Run(ref, c), 0))
	}
	if err := w.c.Status().Update(w.t.Context(), pod); err != nil {
		w.t.Fatal(err)
	}
	return pod
}

func containerStatus(name, id string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Image: "busybox", ImageID: "docker.io/library/busybox@sha256:0",
		ContainerID: "containerd://" + id, Ready: true, Started: ptr.To(true), RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
}

// request creates a request for containers of pod as the manager's webhook completes it: labels, failure
// policy, each container's status context and preStop, and the synced statuses the manager writes next.
func (w *world) request(name string, pod *corev1.Pod, strategy kruiseappsv1alpha1.ContainerRecreateRequestStrategy, containers ...string) *crr {
	w.t.Helper()
	if strategy.FailurePolicy == "" {
		strategy.FailurePolicy = kruiseappsv1alpha1.DefaultContainerRecreateRequestFailurePolicy
	}
	c := &crr{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns, Labels: map[string]string{
		kruiseappsv1alpha1.ContainerRecreateRequestPodUIDKey:   string(pod.UID),
		kruiseappsv1alpha1.ContainerRecreateRequestNodeNameKey: pod.Spec.NodeName,
		kruiseappsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
	}}, Spec: kruiseappsv1alpha1.ContainerRecreateRequestSpec{PodName: pod.Name, Strategy: &strategy}}
	for _, name := range containers {
		c.Spec.Containers = append(c.Spec.Containers, webhookContainer(pod, name))
	}
	if err := w.c.Create(w.t.Context(), c); err != nil {
		w.t.Fatal(err)
	}
	w.sync(c, pod)
	return c
}

func webhookContainer(pod *corev1.Pod, name string) kruiseappsv1alpha1.ContainerRecreateRequestContainer {
	out := kruiseappsv1alpha1.ContainerRecreateRequestContainer{Name: name}
	for _, c := range pod.Spec.Containers {
		if c.Name == name && c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
			out.PreStop = &kruiseappsv1alpha1.ProbeHandler{Exec: c.Lifecycle.PreStop.Exec, HTTPGet: c.Lifecycle.PreStop.HTTPGet,
				TCPSocket: c.Lifecycle.PreStop.TCPSocket}
		}
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == name {
			out.StatusContext = &kruiseappsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: s.ContainerID, RestartCount: s.RestartCount}
		}
	}
	return out
}

// sync writes the pod's container statuses into the request's annotation, as the manager's controller does.
func (w *world) sync(c *crr, pod *corev1.Pod) {
	w.t.Helper()
	var list []syncStatus
	for _, spec := range c.Spec.Containers {
		for _, s := range pod.Status.ContainerStatuses {
			if s.Name == spec.Name {
				list = append(list, syncStatus{Name: s.Name, Ready: s.Ready, RestartCount: s.RestartCount, ContainerID: s.ContainerID})
			}
		}
	}
	raw, err := json.Marshal(list)
	if err != nil {
		w.t.Fatal(err)
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		kruiseappsv1alpha1.ContainerRecreateRequestSyncContainerStatusesKey: string(raw)}}}
	body, _ := json.Marshal(patch)
	if err := w.c.Patch(w.t.Context(), c.DeepCopy(), client.RawPatch("application/merge-patch+json", body)); err != nil {
		w.t.Fatal(err)
	}
}

// restart plays the kubelet restarting a stopped container: a new container in the runtime, reported ready
// in the pod's status; then the manager syncs the requests.
func (w *world) restart(pod *corev1.Pod, name string, requests ...*crr) {
	w.t.Helper()
	id, err := w.rt.Restart(string(pod.UID), name)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.c.Get(w.t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
		w.t.Fatal(err)
	}
	for i, s := range pod.Status.ContainerStatuses {
		if s.Name == name {
			pod.Status.ContainerStatuses[i] = containerStatus(name, id, s.RestartCount+1)
		}
	}
	if err := w.c.Status().Update(w.t.Context(), pod); err != nil {
		w.t.Fatal(err)
	}
	for _, c := range requests {
		w.sync(c, pod)
	}
}

// get reads a request's latest state.
func (w *world) get(c *crr) *crr {
	w.t.Helper()
	out := &crr{}
	if err := w.c.Get(w.t.Context(), client.ObjectKeyFromObject(c), out); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// stopsOf returns the grace periods the runtime received in stops of container id.
func (w *world) stopsOf(id string) []int64 {
	var out []int64
	for _, s := range w.rt.Stops() {
		if s.ContainerID == id {
			out = append(out, s.GraceSeconds)
		}
	}
	return out
}

// containerID is the runtime id of a container as the pod reports it now.
func containerID(pod *corev1.Pod, name string) string {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == name {
			return bareID(s.ContainerID)
		}
	}
	return ""
}

// eventually polls cond until it holds; what names the state in the failure.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, itTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// consistently checks that cond holds for a while: long enough for the agent to have acted on what the
// test did just before.
func consistently(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if !cond() {
			t.Fatalf("expected %s to hold", what)
		}
	}
}

// withPreStop gives a pod's first container an exec preStop handler.
func withPreStop(cmd ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cmd}}}
	}
}
