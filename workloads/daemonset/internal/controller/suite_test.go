package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/daemonset/admission"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// TestMain runs one control plane for the package: the scheduler binds daemon pods by their node affinity,
// kwok runs them, and kube's own DaemonSet controller is there to compare revision hashes with.
func TestMain(m *testing.M) {
	opts := cluster.Options{
		ControllerManager: true,
		Controllers:       []string{"garbage-collector-controller", "serviceaccount-controller", "daemonset-controller"},
		Scheduler:         true,
		Nodes:             1,
	}
	os.Exit(managertest.Main(m, opts, &clusterConfig))
}

func testScheme(t *testing.T) *runtime.Scheme {
	return managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme)
}

// startController creates a namespace and runs the DaemonSet and pod readiness controllers on it until the
// test ends; it returns a direct client for the test's own reads and writes, and the namespace. Each test's
// controllers see only their namespace's objects (and every node), so that the tests run side by side.
func startController(t *testing.T) (client.Client, string) {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := testScheme(t)
	c := managertest.DirectClient(t, clusterConfig, scheme)
	ns := managertest.Namespace(t, c, "ds")
	r := &Reconciler{}
	managertest.Start(t, clusterConfig, scheme, func(mgr ctrl.Manager) error {
		return errors.Join(r.SetupWithManager(mgr), podreadiness.SetupWithManager(mgr))
	}, func(o *ctrl.Options) { o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}} })
	return c, ns
}

// poolTaint is the taint of the tests' node pools (managertest.NodePool), which newDaemonSet tolerates: it
// keeps the other tests' DaemonSets, and the cluster's own node's workloads, off a test's nodes.
const poolTaint = "flotilla.dev/daemonset-test"

// newDaemonSet is a DaemonSet of agent:v1 on the nodes of pool, defaulted as the webhook leaves it.
func newDaemonSet(ns, pool string, mutate ...func(*kruiseappsv1alpha1.DaemonSet)) *kruiseappsv1alpha1.DaemonSet {
	ds := &kruiseappsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
		Spec: kruiseappsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{{Name: "agent", Image: "agent:v1"}},
					NodeSelector:                  map[string]string{"pool": pool},
					Tolerations:                   []corev1.Toleration{{Key: poolTaint, Operator: corev1.TolerationOpExists}},
					TerminationGracePeriodSeconds: ptr.To[int64](0),
				},
			},
		},
	}
	for _, m := range mutate {
		m(ds)
	}
	admission.Default(ds)
	return ds
}

func rollingUpdate(mutate func(*kruiseappsv1alpha1.RollingUpdateDaemonSet)) func(*kruiseappsv1alpha1.DaemonSet) {
	return func(ds *kruiseappsv1alpha1.DaemonSet) {
		if ds.Spec.UpdateStrategy.RollingUpdate == nil {
			ds.Spec.UpdateStrategy.RollingUpdate = &kruiseappsv1alpha1.RollingUpdateDaemonSet{}
		}
		mutate(ds.Spec.UpdateStrategy.RollingUpdate)
	}
}

func intOrStr(n int) *intstr.IntOrString { return ptr.To(intstr.FromInt(n)) }

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	managertest.Create(t, c, obj)
}

// update re-reads the DaemonSet and applies change to it, again after a conflict.
func update(t *testing.T, c client.Client, ds *kruiseappsv1alpha1.DaemonSet, change func(*kruiseappsv1alpha1.DaemonSet)) {
	t.Helper()
	managertest.Update(t, c, ds, change)
}

// settled returns once the controller has planned twice at the DaemonSet's spec: it bumps
// revisionHistoryLimit, a generation the plans ignore, and waits for each generation to be observed. What the
// spec did not make happen by then, it does not make happen: a test's check of an absence needs no sleep.
func settled(t *testing.T, c client.Client, ds *kruiseappsv1alpha1.DaemonSet) {
	t.Helper()
	for range 2 {
		update(t, c, ds, func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.RevisionHistoryLimit = ptr.To(ptr.Deref(ds.Spec.RevisionHistoryLimit, 10) + 1)
		})
		generation := ds.Generation
		eventually(t, fmt.Sprintf("generation %d observed", generation), func(ctx context.Context) (bool, error) {
			got := &kruiseappsv1alpha1.DaemonSet{}
			err := c.Get(ctx, client.ObjectKeyFromObject(ds), got)
			return err == nil && got.Status.ObservedGeneration >= generation, err
		})
	}
}

// newImage changes the template to agent:v2.
func newImage(ds *kruiseappsv1alpha1.DaemonSet) {
	ds.Spec.Template.Spec.Containers[0].Image = "agent:v2"
}

// eventually polls cond until it holds; what names the state in the failure.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	managertest.Eventually(t, itTimeout, what, cond)
}

// livePods are the DaemonSet's pods not being deleted, by node name.
func livePods(ctx context.Context, c client.Client, ds *kruiseappsv1alpha1.DaemonSet) (map[string]corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace(ds.Namespace), client.MatchingLabels{"app": "agent"}); err != nil {
		return nil, err
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		node := p.Spec.NodeName
		if _, dup := out[node]; dup || node == "" {
			return nil, fmt.Errorf("node %q has a second or an unbound pod: %s", node, p.Name)
		}
		out[node] = p
	}
	return out, nil
}

// waitFleet waits until the DaemonSet's status, at its generation, shows want: nodes with an available pod,
// updated of them on the update revision, and the pods agree.
func waitFleet(t *testing.T, c client.Client, ds *kruiseappsv1alpha1.DaemonSet, nodes, updated int32) map[string]corev1.Pod {
	t.Helper()
	var pods map[string]corev1.Pod
	eventually(t, fmt.Sprintf("%d nodes with an available pod, %d updated", nodes, updated), func(ctx context.Context) (bool, error) {
		got := &kruiseappsv1alpha1.DaemonSet{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ds), got); err != nil {
			return false, err
		}
		s := got.Status
		var err error
		if pods, err = livePods(ctx, c, ds); err != nil {
			return false, err
		}
		return s.ObservedGeneration == got.Generation && s.DesiredNumberScheduled == nodes && s.NumberAvailable == nodes &&
				s.UpdatedNumberScheduled == updated && s.CurrentNumberScheduled == nodes && len(pods) == int(nodes),
			fmt.Errorf("status %+v, %d pods", s, len(pods))
	})
	return pods
}

func reread(t *testing.T, c client.Client, ds *kruiseappsv1alpha1.DaemonSet) {
	t.Helper()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(ds), ds); err != nil {
		t.Fatal(err)
	}
}

// eventNotes are the notes of the DaemonSet's events with reason, sorted.
func eventNotes(ctx context.Context, c client.Client, ds *kruiseappsv1alpha1.DaemonSet, reason string) ([]string, error) {
	list := &eventsv1.EventList{}
	if err := c.List(ctx, list, client.InNamespace(ds.Namespace)); err != nil {
		return nil, err
	}
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Name == ds.Name && e.Regarding.Kind == "DaemonSet" && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	sort.Strings(notes)
	return notes, nil
}

// images maps the nodes' pods to their first container's image.
func images(pods map[string]corev1.Pod) map[string]string {
	out := map[string]string{}
	for node, p := range pods {
		out[node] = p.Spec.Containers[0].Image
	}
	return out
}
