package podprobe_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/admission"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/podprobe"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podcache"
)

// cfg is nil when the tests run with -short: no control plane, pure tests only.
var cfg *rest.Config

const itTimeout = 30 * time.Second

// No kubelet and no node agent run: the tests write the nodes' readiness, the pods' status and the
// NodePodProbes' status themselves, as the kubelet and the agents would.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &cfg))
}

var names atomic.Int32

// env is one test's view: a direct client and a namespace for its pods and markers.
type env struct {
	t  *testing.T
	c  client.Client
	ns string
}

// start runs the PodProbeMarker and NodePodProbe controllers until the test ends, on a manager that caches
// pods as the manager does (the pods of native workloads slim).
func start(t *testing.T) *env {
	t.Helper()
	managertest.RequireCluster(t, cfg)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme)
	e := &env{t: t, c: managertest.DirectClient(t, cfg, scheme)}
	e.ns = managertest.NamespaceWithServiceAccount(t, e.c, "ppm")
	managertest.Start(t, cfg, scheme, func(mgr ctrl.Manager) error {
		if err := (&podprobe.MarkerReconciler{}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&podprobe.NodeReconciler{}).SetupWithManager(mgr)
	}, func(o *ctrl.Options) {
		o.Cache.ByObject = map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: podcache.Transform(nil)}}
	})
	return e
}

// node creates a Ready node of the test; it goes when the test ends.
func (e *env) node() string {
	e.t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ppm-node-%d", names.Add(1))}}
	managertest.Create(e.t, e.c, n)
	e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), n) })
	e.setReady(n, corev1.ConditionTrue)
	return n.Name
}

func (e *env) setReady(n *corev1.Node, status corev1.ConditionStatus) {
	e.t.Helper()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status,
		LastTransitionTime: metav1.Now(), LastHeartbeatTime: metav1.Now()}}
	if err := e.c.Status().Update(e.t.Context(), n); err != nil {
		e.t.Fatal(err)
	}
}

// pod creates a pod of a ReplicaSet (so the manager's cache holds it slim) on node, labelled app=game, with
// container app serving port http (8080), and reports it running and initialized, as the kubelet would.
func (e *env) pod(name, node string, change func(*corev1.Pod)) *corev1.Pod {
	e.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: map[string]string{"app": "game"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "game-7c9", UID: "rs-uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "game:v1",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
	}
	if change != nil {
		change(p)
	}
	managertest.Create(e.t, e.c, p)
	e.setInitialized(p, corev1.ConditionTrue)
	return p
}

func (e *env) setInitialized(p *corev1.Pod, status corev1.ConditionStatus) {
	e.t.Helper()
	n := names.Add(1)
	ip := fmt.Sprintf("10.1.%d.%d", n/250%250, n%250+1)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodInitialized, Status: status, LastTransitionTime: metav1.Now()}}}
	if err := e.c.Status().Update(e.t.Context(), p); err != nil {
		e.t.Fatal(err)
	}
}

// marker creates a PodProbeMarker over the pods labelled app=game, checked as the webhook would.
func (e *env) marker(name string, probes ...kruiseappsv1alpha1.PodContainerProbe) *kruiseappsv1alpha1.PodProbeMarker {
	e.t.Helper()
	m := &kruiseappsv1alpha1.PodProbeMarker{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: kruiseappsv1alpha1.PodProbeMarkerSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "game"}}, Probes: probes}}
	if errs := admission.ValidatePodProbeMarker(m, nil); len(errs) > 0 {
		e.t.Fatalf("the webhook would refuse the marker: %v", errs)
	}
	managertest.Create(e.t, e.c, m)
	return m
}

func execProbe(name string, cmd ...string) kruiseappsv1alpha1.PodContainerProbe {
	return kruiseappsv1alpha1.PodContainerProbe{Name: name, ContainerName: "app", PodConditionType: "game.kruise.io/" + name,
		Probe: kruiseappsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			Exec: &corev1.ExecAction{Command: cmd}}, PeriodSeconds: 10}}}
}

func tcpProbe(name string, port intstr.IntOrString) kruiseappsv1alpha1.PodContainerProbe {
	return kruiseappsv1alpha1.PodContainerProbe{Name: name, ContainerName: "app", PodConditionType: "game.kruise.io/" + name,
		Probe: kruiseappsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			TCPSocket: &corev1.TCPSocketAction{Port: port}}}}}
}

// npp is the node's NodePodProbe, nil when there is none.
func (e *env) npp(node string) *kruiseappsv1alpha1.NodePodProbe {
	e.t.Helper()
	npp := &kruiseappsv1alpha1.NodePodProbe{}
	if err := e.c.Get(e.t.Context(), client.ObjectKey{Name: node}, npp); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		e.t.Fatal(err)
	}
	return npp
}

// probes are the names of the probes the node's NodePodProbe holds for the pod, in order; nil without an
// entry.
func (e *env) probes(node string, pod *corev1.Pod) []string {
	e.t.Helper()
	entry := e.entry(node, pod)
	if entry == nil {
		return nil
	}
	out := []string{}
	for _, p := range entry.Probes {
		out = append(out, p.Name)
	}
	return out
}

func (e *env) entry(node string, pod *corev1.Pod) *kruiseappsv1alpha1.PodProbe {
	e.t.Helper()
	npp := e.npp(node)
	if npp == nil {
		return nil
	}
	for i, entry := range npp.Spec.PodProbes {
		if entry.Namespace == pod.Namespace && entry.Name == pod.Name && entry.UID == string(pod.UID) {
			return &npp.Spec.PodProbes[i]
		}
	}
	return nil
}

// waitProbes waits until the node's NodePodProbe holds exactly want (none: no entry) for the pod, in any order
// (markers write concurrently; the order within an entry is the planner's, tested with it).
func (e *env) waitProbes(node string, pod *corev1.Pod, want ...string) {
	e.t.Helper()
	want = slices.Sorted(slices.Values(want))
	managertest.Eventually(e.t, itTimeout, fmt.Sprintf("probes %v of %s on %s", want, pod.Name, node), func(context.Context) (bool, error) {
		got := e.probes(node, pod)
		return slices.Equal(slices.Sorted(slices.Values(got)), want) && (got == nil) == (len(want) == 0), fmt.Errorf("probes %v", got)
	})
}

// report plays the node agent: the pod's results in the node's NodePodProbe status are states.
func (e *env) report(node string, pod *corev1.Pod, states ...kruiseappsv1alpha1.ContainerProbeState) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		npp := e.npp(node)
		st := kruiseappsv1alpha1.PodProbeStatus{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID), ProbeStates: states}
		statuses := slices.DeleteFunc(npp.Status.PodProbeStatuses, func(s kruiseappsv1alpha1.PodProbeStatus) bool { return s.UID == st.UID })
		npp.Status.PodProbeStatuses = append(statuses, st)
		return e.c.Status().Update(e.t.Context(), npp)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) get(obj client.Object) error {
	return e.c.Get(e.t.Context(), client.ObjectKeyFromObject(obj), obj)
}

func (e *env) eventually(what string, cond func() (bool, error)) {
	e.t.Helper()
	managertest.Eventually(e.t, itTimeout, what, func(context.Context) (bool, error) { return cond() })
}

// consistently checks that cond holds long enough for the controllers to have acted.
func (e *env) consistently(what string, cond func() bool) {
	e.t.Helper()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if !cond() {
			e.t.Fatalf("expected %s to hold", what)
		}
	}
}

// waitEvent waits for an event of reason about the object kind/name of the test's namespace and returns its
// note.
func (e *env) waitEvent(kind, name, reason string) string {
	e.t.Helper()
	var note string
	e.eventually(fmt.Sprintf("event %s about %s %s", reason, kind, name), func() (bool, error) {
		list := &eventsv1.EventList{}
		if err := e.c.List(e.t.Context(), list, client.InNamespace(e.ns)); err != nil {
			return false, err
		}
		var seen []string
		for _, ev := range list.Items {
			if ev.Regarding.Kind == kind && ev.Regarding.Name == name && ev.Reason == reason {
				note = ev.Note
				return true, nil
			}
			seen = append(seen, ev.Reason)
		}
		return false, fmt.Errorf("events %v", seen)
	})
	return note
}
