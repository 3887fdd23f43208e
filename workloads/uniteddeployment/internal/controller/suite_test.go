package controller

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
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
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/uniteddeployment/admission"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// TestMain runs one control plane for the package: no workload controllers, so the tests read what the
// UnitedDeployment controller writes, and write the subset workloads' statuses themselves.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &clusterConfig))
}

// start creates a namespace and runs the UnitedDeployment controller on it until the test ends; it returns a
// direct client and the namespace.
func start(t *testing.T) (client.Client, string) {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme, kruiseappsv1beta1.AddToScheme)
	c := managertest.DirectClient(t, clusterConfig, scheme)
	ns := managertest.NamespaceWithServiceAccount(t, c, "ud") // the adaptive test creates pods
	managertest.Start(t, clusterConfig, scheme, (&Reconciler{}).SetupWithManager,
		func(o *ctrl.Options) { o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}} })
	return c, ns
}

// zones are subsets named after three zones, each selecting its zone's nodes.
func zones(names ...string) []kruiseappsv1alpha1.Subset {
	var out []kruiseappsv1alpha1.Subset
	for _, z := range names {
		out = append(out, kruiseappsv1alpha1.Subset{Name: z, NodeSelectorTerm: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{z}},
		}}})
	}
	return out
}

// pod is the pod template of the tests' UnitedDeployments.
func pod(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

// newUD is a UnitedDeployment of replicas over subsets, with its template set by set.
func newUD(ns string, replicas int32, subsets []kruiseappsv1alpha1.Subset, set func(*kruiseappsv1alpha1.SubsetTemplate)) *kruiseappsv1alpha1.UnitedDeployment {
	ud := &kruiseappsv1alpha1.UnitedDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	ud.Spec.Replicas = ptr.To(replicas)
	ud.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	ud.Spec.Topology.Subsets = subsets
	set(&ud.Spec.Template)
	return ud
}

// create defaults and validates ud as the webhooks would, then creates it.
func create(t *testing.T, c client.Client, ud *kruiseappsv1alpha1.UnitedDeployment) {
	t.Helper()
	admission.Default(ud, nil)
	if errs := admission.Validate(ud, nil); len(errs) > 0 {
		t.Fatalf("the webhook would refuse the UnitedDeployment: %v", errs)
	}
	managertest.Create(t, c, ud)
}

// update changes the UnitedDeployment with mutate, defaulted and validated as the webhooks would, retrying on
// conflicts.
func update(t *testing.T, c client.Client, ud *kruiseappsv1alpha1.UnitedDeployment, mutate func(*kruiseappsv1alpha1.UnitedDeployment)) {
	t.Helper()
	managertest.Update(t, c, ud.DeepCopy(), func(got *kruiseappsv1alpha1.UnitedDeployment) {
		old := got.DeepCopy()
		mutate(got)
		admission.Default(got, old)
		if errs := admission.Validate(got, old); len(errs) > 0 {
			t.Fatalf("the webhook would refuse the update: %v", errs)
		}
	})
}

func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	managertest.Eventually(t, itTimeout, what, cond)
}

// waitStatus waits until the UnitedDeployment's status satisfies done and returns the UnitedDeployment.
func waitStatus(t *testing.T, c client.Client, ud *kruiseappsv1alpha1.UnitedDeployment, what string,
	done func(*kruiseappsv1alpha1.UnitedDeployment) bool) *kruiseappsv1alpha1.UnitedDeployment {
	t.Helper()
	got := &kruiseappsv1alpha1.UnitedDeployment{}
	eventually(t, what, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ud), got); err != nil {
			return false, err
		}
		return done(got), fmt.Errorf("generation %d status %+v updateStatus %+v", got.Generation, got.Status, got.Status.UpdateStatus)
	})
	return got
}

// bySubset lists the namespace's objects of list's kind by their subset label.
func bySubset[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, c client.Client, ns string, list client.ObjectList, items func() []T) (map[string]PT, error) {
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := map[string]PT{}
	for _, it := range items() {
		obj := PT(&it)
		out[obj.GetLabels()[kruiseappsv1alpha1.SubSetNameLabelKey]] = obj
	}
	return out, nil
}

// cloneSets are the namespace's CloneSets by subset.
func cloneSets(ctx context.Context, c client.Client, ns string) (map[string]*kruiseappsv1alpha1.CloneSet, error) {
	list := &kruiseappsv1alpha1.CloneSetList{}
	return bySubset[kruiseappsv1alpha1.CloneSet](ctx, c, ns, list, func() []kruiseappsv1alpha1.CloneSet { return list.Items })
}

// eventsFor are the names of the related objects of the events of reason regarding the UnitedDeployment.
func eventsFor(ctx context.Context, c client.Client, ud *kruiseappsv1alpha1.UnitedDeployment, reason string) (map[string]bool, error) {
	list := &eventsv1.EventList{}
	if err := c.List(ctx, list, client.InNamespace(ud.Namespace)); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, e := range list.Items {
		if e.Regarding.Kind == "UnitedDeployment" && e.Regarding.Name == ud.Name && e.Reason == reason && e.Related != nil {
			out[e.Related.Name] = true
		}
	}
	return out, nil
}

func condition(s kruiseappsv1alpha1.UnitedDeploymentStatus, ct kruiseappsv1alpha1.UnitedDeploymentConditionType) *kruiseappsv1alpha1.UnitedDeploymentCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == ct {
			return &s.Conditions[i]
		}
	}
	return nil
}
