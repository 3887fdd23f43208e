package controller

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// TestMain runs one control plane for the package, with the chart's CRDs and a custom workload kind with a
// scale subresource. No controller-manager runs: the tests create the workloads' pods themselves.
func TestMain(m *testing.M) {
	opts := cluster.Options{CRDDirs: []string{"charts/flotilla/crds", "workloads/podunavailablebudget/internal/controller/testdata/crds"}}
	os.Exit(managertest.Main(m, opts, &clusterConfig))
}

type env struct {
	c  client.Client
	ns string
}

// start runs the controller until the test ends and returns a namespace of the test's.
func start(t *testing.T) *env {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme, kruiseappsv1beta1.AddToScheme,
		kruisepolicyv1alpha1.AddToScheme)
	e := &env{c: managertest.DirectClient(t, clusterConfig, scheme)}
	managertest.Start(t, clusterConfig, scheme, (&Reconciler{KruiseWorkloads: true}).SetupWithManager)
	e.ns = managertest.NamespaceWithServiceAccount(t, e.c, "pubctl")
	return e
}

// pods creates n running, ready pods named <prefix>-<i> labelled app=<app>, controlled by owner (nil: none).
func (e *env) pods(t *testing.T, prefix, app string, n int, owner client.Object, kind string) {
	t.Helper()
	for i := range n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i), Namespace: e.ns, Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:v1"}}},
		}
		if owner != nil {
			gvk := owner.GetObjectKind().GroupVersionKind()
			pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: gvk.GroupVersion().String(), Kind: kind, Name: owner.GetName(),
				UID: owner.GetUID(), Controller: ptr.To(true)}}
		}
		managertest.Create(t, e.c, pod)
		ready := client.RawPatch(types.MergePatchType, []byte(`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`))
		if err := e.c.Status().Patch(context.Background(), pod, ready); err != nil {
			t.Fatal(err)
		}
	}
}

func (e *env) budget(t *testing.T, name string, spec kruisepolicyv1alpha1.PodUnavailableBudgetSpec) *kruisepolicyv1alpha1.PodUnavailableBudget {
	t.Helper()
	pub := &kruisepolicyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, Spec: spec}
	managertest.Create(t, e.c, pub)
	return pub
}

// waitStatus waits until the budget's status of its generation reports allowed, current, desired and total.
func (e *env) waitStatus(t *testing.T, pub *kruisepolicyv1alpha1.PodUnavailableBudget, allowed, current, desired, total int32) {
	t.Helper()
	got := &kruisepolicyv1alpha1.PodUnavailableBudget{}
	managertest.Eventually(t, itTimeout, fmt.Sprintf("budget %s at allowed %d, current %d, desired %d, total %d", pub.Name,
		allowed, current, desired, total), func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(pub), got); err != nil {
			return false, err
		}
		st := got.Status
		return st.ObservedGeneration == got.Generation && st.UnavailableAllowed == allowed && st.CurrentAvailable == current &&
			st.DesiredAvailable == desired && st.TotalReplicas == total, fmt.Errorf("status %+v", st)
	})
}

// marked reports the pods of the namespace that carry the related-pub annotation of budget.
func (e *env) marked(ctx context.Context, budget string) (int, error) {
	list := &corev1.PodList{}
	if err := e.c.List(ctx, list, client.InNamespace(e.ns)); err != nil {
		return 0, err
	}
	n := 0
	for _, p := range list.Items {
		if p.Annotations[kruisepolicyv1alpha1.PodRelatedPubAnnotation] == budget && p.Annotations[kruisepolicyv1alpha1.PodRelatedPubAnnotationLegacy] == budget {
			n++
		}
	}
	return n, nil
}

func maxUnavailable(n int) *intstr.IntOrString {
	v := intstr.FromInt(n)
	return &v
}

// A budget on a Deployment counts the pods of its ReplicaSets against its replicas, marks them, and follows
// the Deployment's scale.
func TestTargetDeployment(t *testing.T) {
	e := start(t)
	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:v1"}}}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: e.ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	managertest.Create(t, e.c, d)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: e.ns, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	managertest.Create(t, e.c, rs)
	rs.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	e.pods(t, "web", "web", 3, rs, "ReplicaSet")
	e.pods(t, "stray", "web", 1, nil, "")

	pub := e.budget(t, "web", kruisepolicyv1alpha1.PodUnavailableBudgetSpec{MaxUnavailable: maxUnavailable(1),
		TargetReference: &kruisepolicyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}})
	e.waitStatus(t, pub, 1, 3, 2, 3)
	managertest.Eventually(t, itTimeout, "the Deployment's pods marked, and only them", func(ctx context.Context) (bool, error) {
		n, err := e.marked(ctx, "web")
		return n == 3, err
	})

	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":5}}`))
	if err := e.c.Patch(t.Context(), d, patch); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, pub, 0, 3, 4, 5)
}

// A budget with a selector counts its pods against the replicas of their workloads, each once.
func TestSelectorCountsTheWorkloadsReplicas(t *testing.T) {
	e := start(t)
	labels := map[string]string{"app": "cache"}
	cs := &kruiseappsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: e.ns},
		Spec: kruiseappsv1alpha1.CloneSetSpec{Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:v1"}}}}}}
	managertest.Create(t, e.c, cs)
	cs.SetGroupVersionKind(kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet"))
	e.pods(t, "cache", "cache", 3, cs, "CloneSet")
	e.pods(t, "bare", "cache", 1, nil, "")

	pub := e.budget(t, "cache", kruisepolicyv1alpha1.PodUnavailableBudgetSpec{MaxUnavailable: maxUnavailable(1),
		Selector: &metav1.LabelSelector{MatchLabels: labels}})
	// Four pods are available; the CloneSet wants four, of which three must stay.
	e.waitStatus(t, pub, 1, 4, 3, 4)

	if err := e.c.Delete(t.Context(), cs); err != nil {
		t.Fatal(err)
	}
	// Its pods stay (no garbage collector here) but no workload wants them: nothing is protected.
	e.waitStatus(t, pub, 4, 4, 0, 0)
}

// A budget on a workload of any kind with a scale subresource reads its replicas and its pods through it.
func TestTargetScaleSubresource(t *testing.T) {
	e := start(t)
	fleet := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "pubtest.flotilla.dev/v1", "kind": "Fleet", "metadata": map[string]any{"name": "ships", "namespace": e.ns},
		"spec": map[string]any{"replicas": int64(2)},
	}}
	managertest.Create(t, e.c, fleet)
	fleet.Object["status"] = map[string]any{"replicas": int64(2), "selector": "app=ship"}
	if err := e.c.Status().Update(t.Context(), fleet); err != nil {
		t.Fatal(err)
	}
	e.pods(t, "ship", "ship", 2, nil, "")

	pub := e.budget(t, "ships", kruisepolicyv1alpha1.PodUnavailableBudgetSpec{MinAvailable: maxUnavailable(2),
		TargetReference: &kruisepolicyv1alpha1.TargetReference{APIVersion: "pubtest.flotilla.dev/v1", Kind: "Fleet", Name: "ships"}})
	e.waitStatus(t, pub, 0, 2, 2, 2)
	managertest.Eventually(t, itTimeout, "the fleet's pods marked", func(ctx context.Context) (bool, error) {
		n, err := e.marked(ctx, "ships")
		return n == 2, err
	})
}

// A pod that stops being ready leaves the budget's count, and comes back when it is ready again.
func TestReadinessChangesTheCount(t *testing.T) {
	e := start(t)
	e.pods(t, "api", "api", 3, nil, "")
	pub := e.budget(t, "api", kruisepolicyv1alpha1.PodUnavailableBudgetSpec{MaxUnavailable: maxUnavailable(1),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}})
	if err := e.c.Patch(t.Context(), pub, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"pub.kruise.io/protect-total-replicas":"3"}}}`))); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, pub, 1, 3, 2, 3)
	notReady := client.RawPatch(types.MergePatchType, []byte(`{"status":{"conditions":[{"type":"Ready","status":"False"}]}}`))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "api-0"}}
	if err := e.c.Status().Patch(t.Context(), pod, notReady); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, pub, 0, 2, 2, 3)
}
