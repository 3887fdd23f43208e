package controller

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// TestMain runs one control plane for the package with kwok, which runs the pods on the tests' kwok node
// and restarts a container whose image changed (test/cluster/stages/pod-restart.yaml), as a kubelet does.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{Nodes: 1}, &clusterConfig))
}

var counter atomic.Int32

// env is one test's world: a namespace for its pods and revisions, a kwok node, and the controller.
type env struct {
	c    client.Client
	ns   string
	node string
}

// start creates a namespace and a kwok node and runs the SidecarSet controller until the test ends; the
// controller keeps revisions in the namespace and sees only its pods.
func start(t *testing.T) *env {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme)
	c := managertest.DirectClient(t, clusterConfig, scheme)
	n := counter.Add(1)
	e := &env{c: c, ns: managertest.NamespaceWithServiceAccount(t, c, "scs"), node: fmt.Sprintf("scs-node-%d", n)}
	create(t, c, cluster.KwokNode(e.node, 3000+int(n), 0))
	t.Cleanup(func() { _ = c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.node}}) })
	r := &Reconciler{Namespace: e.ns}
	managertest.Start(t, clusterConfig, scheme, r.SetupWithManager,
		func(o *ctrl.Options) { o.Cache.DefaultNamespaces = map[string]cache.Config{e.ns: {}} })
	return e
}

// newSet is the seed's scs SidecarSet under a name of the test's own, selecting its namespace's
// app=nginx pods; it is deleted when the test ends.
func (e *env) newSet(t *testing.T, mutate ...func(*kruiseappsv1alpha1.SidecarSet)) *kruiseappsv1alpha1.SidecarSet {
	t.Helper()
	set := &kruiseappsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns},
		Spec: kruiseappsv1alpha1.SidecarSetSpec{
			Namespace: e.ns,
			Selector:  &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			Containers: []kruiseappsv1alpha1.SidecarContainer{{Container: corev1.Container{
				Name: "scs", Image: "busybox:1.35.0", Command: []string{"sleep", "999d"},
				VolumeMounts: []corev1.VolumeMount{{Name: "log", MountPath: "/var/log"}},
			}}},
			Volumes: []corev1.Volume{{Name: "log", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			UpdateStrategy: kruiseappsv1alpha1.SidecarSetUpdateStrategy{
				Type: kruiseappsv1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			},
		},
	}
	for _, m := range mutate {
		m(set)
	}
	create(t, e.c, set)
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), set) })
	return set
}

// newPod creates an app=nginx pod on the test's node carrying set's sidecar as the pod webhook injects it.
func (e *env) newPod(t *testing.T, set *kruiseappsv1alpha1.SidecarSet, name string, labels ...string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: map[string]string{"app": "nginx"}},
		Spec: corev1.PodSpec{NodeName: e.node, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}},
	}
	for i := 0; i+1 < len(labels); i += 2 {
		pod.Labels[labels[i]] = labels[i+1]
	}
	if _, err := inject.Inject(pod, []inject.Source{{Set: set}}, metav1.Now()); err != nil {
		t.Fatal(err)
	}
	create(t, e.c, pod)
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

// waitStatus waits until the SidecarSet's status satisfies done.
func (e *env) waitStatus(t *testing.T, set *kruiseappsv1alpha1.SidecarSet, what string,
	done func(kruiseappsv1alpha1.SidecarSetStatus) bool) *kruiseappsv1alpha1.SidecarSet {
	t.Helper()
	got := &kruiseappsv1alpha1.SidecarSet{}
	eventually(t, what, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(set), got); err != nil {
			return false, err
		}
		s := got.Status
		return done(s), fmt.Errorf("generation %d observed %d matched %d updated %d ready %d updatedReady %d latest %q",
			got.Generation, s.ObservedGeneration, s.MatchedPods, s.UpdatedPods, s.ReadyPods, s.UpdatedReadyPods, s.LatestRevision)
	})
	return got
}

// pods are the namespace's pods by name.
func (e *env) pods(ctx context.Context) (map[string]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := e.c.List(ctx, list, client.InNamespace(e.ns)); err != nil {
		return nil, err
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// setImage changes the image of the SidecarSet's first sidecar, as `kubectl patch` does.
func (e *env) setImage(t *testing.T, set *kruiseappsv1alpha1.SidecarSet, image string, mutate ...func(*kruiseappsv1alpha1.SidecarSet)) {
	t.Helper()
	managertest.Update(t, e.c, set.DeepCopy(), func(got *kruiseappsv1alpha1.SidecarSet) {
		got.Spec.Containers[0].Image = image
		for _, m := range mutate {
			m(got)
		}
	})
}

// sidecarImage is the image of the pod's scs container.
func sidecarImage(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if c.Name == "scs" {
			return c.Image
		}
	}
	return ""
}
