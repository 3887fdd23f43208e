package containermeta

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	"github.com/flotilla-dev/flotilla/nodeagent/cri/critest"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/inplaceupdate"
)

var clusterConfig *rest.Config

// The reporter needs only the API server: the test plays the kubelet with the critest runtime.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &clusterConfig))
}

const node = "node-meta"

// kubelet plays the node: containers in the runtime whose env holds the pod's label values at start.
type kubelet struct {
	t  *testing.T
	c  client.Client
	rt *critest.Runtime
	mu sync.Mutex
	// env is what `env` prints in each container; with noEnv set, containers cannot run it.
	env   map[string]string
	noEnv bool
}

func startReporter(t *testing.T) *kubelet {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	k := &kubelet{t: t, rt: critest.Start(t), env: map[string]string{}}
	k.rt.OnExec(func(id string, cmd []string) (cri.ExecResult, error) {
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.noEnv || !slices.Equal(cmd, []string{"env"}) {
			return cri.ExecResult{ExitCode: 127}, nil
		}
		return cri.ExecResult{Stdout: []byte("PATH=/bin\n" + k.env[id])}, nil
	})
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme)
	k.c = managertest.DirectClient(t, clusterConfig, scheme)
	rt := k.rt.Dial(t)
	managertest.Start(t, clusterConfig, scheme, (&Reconciler{NodeName: node, Runtime: rt}).SetupWithManager,
		func(o *ctrl.Options) { o.Cache = cache.Options{ByObject: CacheByObject(node)} })
	return k
}

// runPod creates a pod of a CloneSet (or of nobody) on nodeName whose container app reads label color, and
// starts the container with the pod's color.
func (k *kubelet) runPod(ns, name, nodeName string, owned bool) *corev1.Pod {
	k.t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"color": "blue"}},
		Spec: corev1.PodSpec{NodeName: nodeName, AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](7),
			Containers: []corev1.Container{{Name: "app", Image: "busybox", Env: []corev1.EnvVar{{Name: "COLOR",
				ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['color']"}}}}}}}}
	if owned {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web",
			UID: "0b0e5b1c-0000-4000-8000-000000000001", Controller: ptr.To(true)}}
	}
	if err := k.c.Create(k.t.Context(), pod); err != nil {
		k.t.Fatal(err)
	}
	k.start(pod, "")
	return pod
}

// start runs (or, after a stop, restarts) the app container with the pod's current color, and reports it
// in the pod's status.
func (k *kubelet) start(pod *corev1.Pod, previous string) string {
	k.t.Helper()
	var id string
	var restarts int32
	// The agent may exec env in the container as soon as the runtime lists it: its env is in place first.
	k.mu.Lock()
	if previous == "" {
		id = k.rt.Run(critest.Pod{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}, "app")
	} else {
		var err error
		if id, err = k.rt.Restart(string(pod.UID), "app"); err != nil {
			k.mu.Unlock()
			k.t.Fatal(err)
		}
		restarts = 1
	}
	k.env[id] = "COLOR=" + pod.Labels["color"] + "\n"
	k.mu.Unlock()
	k.setStatus(pod, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "busybox", ContainerID: "containerd://" + id, RestartCount: restarts,
			Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	})
	return id
}

func (k *kubelet) setStatus(pod *corev1.Pod, change func(*corev1.PodStatus)) {
	k.t.Helper()
	// The agent writes its report through pods/status too, and may do so between the read and the write.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k.c.Get(k.t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		change(&pod.Status)
		return k.c.Status().Update(k.t.Context(), pod)
	})
	if err != nil {
		k.t.Fatal(err)
	}
}

// waitReport waits until the pod's report names container id with the hash of the pod's current values.
func (k *kubelet) waitReport(pod *corev1.Pod, id string) {
	k.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(k.t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := k.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err
		}
		last = pod.Annotations[kruiseappspub.RuntimeContainerMetaKey]
		set, ok := inplaceupdate.RuntimeMeta(pod)
		return ok && len(set.Containers) == 1 && set.Containers[0].ContainerID == "containerd://"+id &&
			set.Containers[0].Hashes.ExtractedEnvFromMetadataHash == inplaceupdate.ExpectedEnvHash(pod, &pod.Spec.Containers[0]), nil
	})
	if err != nil {
		k.t.Fatalf("no current report of container %s: %v; last report %s", id, err, last)
	}
}

func TestRestartsAContainerForNewLabelValues(t *testing.T) {
	k := startReporter(t)
	ns := managertest.NamespaceWithServiceAccount(t, k.c, "meta")
	succeeded := restartsCounted(t)
	pod := k.runPod(ns, "web-1", node, true)
	first := pod.Status.ContainerStatuses[0].ContainerID[len("containerd://"):]
	k.waitReport(pod, first)

	// The CloneSet controller's in-place update: not ready first, then the new template label.
	k.setStatus(pod, func(s *corev1.PodStatus) {
		s.Conditions = append(s.Conditions, corev1.PodCondition{Type: kruiseappspub.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	})
	managertest.Update(t, k.c, pod, func(p *corev1.Pod) { p.Labels["color"] = "green" })
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return !k.rt.Running(first), nil
	})
	if err != nil {
		t.Fatalf("container %s still runs with the old label value", first)
	}
	if stops := k.rt.Stops(); len(stops) != 1 || stops[0] != (critest.Stop{ContainerID: first, GraceSeconds: 7}) {
		t.Fatalf("stops %+v, want one of %s with the pod's grace period", stops, first)
	}
	// The runtime shows the container stopped before the agent, back from the call, counts the restart.
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return restartsCounted(t) > succeeded, nil
	})
	if grown := restartsCounted(t) - succeeded; err != nil || grown != 1 {
		t.Errorf("%s{result=succeeded} grew by %v (%v), want 1", RestartsName, grown, err)
	}
	second := k.start(pod, first)
	k.waitReport(pod, second)
	if stops := k.rt.Stops(); len(stops) != 1 {
		t.Fatalf("the restarted container was stopped too: %+v", stops)
	}
}

// restartsCounted reads the process-wide count of successful restarts; tests compare it before and after.
func restartsCounted(t *testing.T) float64 {
	t.Helper()
	var m dto.Metric
	if err := restarts.WithLabelValues("succeeded").Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestAContainerWithoutEnvIsNeverRestarted(t *testing.T) {
	k := startReporter(t)
	k.mu.Lock()
	k.noEnv = true
	k.mu.Unlock()
	ns := managertest.NamespaceWithServiceAccount(t, k.c, "meta")
	pod := k.runPod(ns, "web-1", node, true)
	id := pod.Status.ContainerStatuses[0].ContainerID
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list := &eventsv1.EventList{}
		if err := k.c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
			return e.Reason == "UnreadableEnv" && e.Regarding.Name == pod.Name && e.Type == corev1.EventTypeWarning
		}), nil
	})
	if err != nil {
		t.Fatalf("no UnreadableEnv event: %v", err)
	}
	// The event is recorded before the report is written, and a report written before the pod's status named
	// the container gives its id in the runtime's scheme: wait for the report of the container as named.
	var set kruiseappspub.RuntimeContainerMetaSet
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := k.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err
		}
		got, ok := inplaceupdate.RuntimeMeta(pod)
		set = got
		return ok && len(set.Containers) == 1 && set.Containers[0].ContainerID == id, nil
	})
	if err != nil || set.Containers[0].Hashes.ExtractedEnvFromMetadataHash != 0 {
		t.Fatalf("report %+v (%v), want container %s without an env hash", set, err, id)
	}
	k.setStatus(pod, func(s *corev1.PodStatus) {
		s.Conditions = append(s.Conditions, corev1.PodCondition{Type: kruiseappspub.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	})
	managertest.Update(t, k.c, pod, func(p *corev1.Pod) { p.Labels["color"] = "green" })
	time.Sleep(2 * time.Second)
	if stops := k.rt.Stops(); len(stops) != 0 {
		t.Fatalf("stops %+v: a container whose values are unknown was restarted", stops)
	}
}

func TestReportsOnlyKruisePodsOfItsNode(t *testing.T) {
	k := startReporter(t)
	ns := managertest.NamespaceWithServiceAccount(t, k.c, "meta")
	plain := k.runPod(ns, "plain", node, false)
	elsewhere := k.runPod(ns, "elsewhere", "node-other", true)
	mine := k.runPod(ns, "mine", node, true)
	k.waitReport(mine, mine.Status.ContainerStatuses[0].ContainerID[len("containerd://"):])
	for _, p := range []*corev1.Pod{plain, elsewhere} {
		if err := k.c.Get(t.Context(), client.ObjectKeyFromObject(p), p); err != nil {
			t.Fatal(err)
		}
		if v, ok := p.Annotations[kruiseappspub.RuntimeContainerMetaKey]; ok {
			t.Errorf("pod %s got a report: %s", p.Name, v)
		}
	}
}
