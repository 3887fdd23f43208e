package terminator

import (
	"context"
	"os"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podcache"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// TestMain runs one control plane for the package. No node runs the tests' pods: the tests write their
// statuses, as a kubelet would.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &clusterConfig))
}

// env is one test's world: a namespace, a suspended Job that owns its pods, and the terminator.
type env struct {
	c   client.Client
	ns  string
	job *batchv1.Job
}

// start creates a namespace and a Job, and runs the terminator (one worker: pods are handled in the order
// their events arrive) with the manager's pod cache, which holds the pods of Jobs slim unless they carry
// the terminator's env.
func start(t *testing.T) *env {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme)
	c := managertest.DirectClient(t, clusterConfig, scheme)
	e := &env{c: c, ns: managertest.NamespaceWithServiceAccount(t, c, "term")}
	e.job = &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "job"},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "main:1"}},
		}}},
	}
	create(t, c, e.job)
	r := &Reconciler{Workers: 1}
	managertest.Start(t, clusterConfig, scheme, r.SetupWithManager, func(o *ctrl.Options) {
		o.Cache.DefaultNamespaces = map[string]cache.Config{e.ns: {}}
		o.Cache.ByObject = map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: podcache.Transform(nil)}}
	})
	return e
}

// container is one container of a test pod: its env (name=value pairs) and its state, "running" or
// "exit:N".
type container struct {
	name, state string
	env         []string
}

// newPod creates a pod of the Job with containers and writes their statuses; the pod is Running.
func (e *env) newPod(t *testing.T, name string, policy corev1.RestartPolicy, containers ...container) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "batch/v1", Kind: "Job", Name: e.job.Name, UID: e.job.UID, Controller: ptr.To(true),
		}}},
		// A node no kubelet or kwok serves: the statuses are the test's.
		Spec: corev1.PodSpec{RestartPolicy: policy, NodeName: "nowhere"},
	}
	for _, c := range containers {
		spec := corev1.Container{Name: c.name, Image: c.name + ":1"}
		for i := 0; i+1 < len(c.env); i += 2 {
			spec.Env = append(spec.Env, corev1.EnvVar{Name: c.env[i], Value: c.env[i+1]})
		}
		pod.Spec.Containers = append(pod.Spec.Containers, spec)
	}
	create(t, e.c, pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning}
	for _, c := range containers {
		s := corev1.ContainerStatus{Name: c.name, Image: c.name + ":1", ContainerID: "containerd://" + name + "-" + c.name}
		switch c.state {
		case "running":
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.Now()}
			s.Ready, s.Started = true, ptr.To(true)
		case "exit:0", "exit:1":
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(c.state[5] - '0'), Reason: "Completed"}
		}
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, s)
	}
	if err := e.c.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	managertest.Create(t, c, obj)
}

// eventually polls cond until it holds; the last error names the state in the failure.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	managertest.Eventually(t, itTimeout, what, cond)
}

// request waits for the pod's request and returns it.
func (e *env) request(t *testing.T, pod *corev1.Pod) *kruiseappsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	got := &kruiseappsv1alpha1.ContainerRecreateRequest{}
	key := client.ObjectKey{Namespace: e.ns, Name: "sidecar-termination-" + string(pod.UID)}
	eventually(t, "the request "+key.Name, func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, key, got)
		return err == nil, err
	})
	return got
}

// requestNames are the names of the namespace's requests.
func (e *env) requestNames(t *testing.T) []string {
	t.Helper()
	list := &kruiseappsv1alpha1.ContainerRecreateRequestList{}
	if err := e.c.List(t.Context(), list, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range list.Items {
		out = append(out, c.Name)
	}
	return out
}
