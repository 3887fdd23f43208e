package controller

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/resourcedistribution/admission"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// TestMain runs one control plane for the package; the garbage collector removes the copies of a deleted
// distribution.
func TestMain(m *testing.M) {
	opts := cluster.Options{ControllerManager: true, Controllers: []string{"garbage-collector-controller"}}
	os.Exit(managertest.Main(m, opts, &clusterConfig))
}

// testLabel marks a test's distributions; each test's controller sees only its own (distributions are
// cluster-scoped, and the tests run in parallel).
const testLabel = "resourcedistribution.flotilla.dev/test"

// tests and pokes number the tests and their pokes of the process, so that names never repeat.
var tests, pokes atomic.Int32

// env is one test's cluster view: a direct client, its label value and a prefix for its names.
type env struct {
	c  client.Client
	id string
}

// start runs the ResourceDistribution controller until the test ends, on the distributions labelled for
// the test only.
func start(t *testing.T) *env {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme)
	e := &env{c: managertest.DirectClient(t, clusterConfig, scheme), id: fmt.Sprintf("rd%d-%d", tests.Add(1), time.Now().UnixNano()%100000)}
	selector := labels.SelectorFromSet(labels.Set{testLabel: e.id})
	managertest.Start(t, clusterConfig, scheme, (&Reconciler{}).SetupWithManager, func(o *ctrl.Options) {
		o.Cache.ByObject = map[client.Object]cache.ByObject{&kruiseappsv1alpha1.ResourceDistribution{}: {Label: selector}}
	})
	return e
}

// namespace creates a namespace of the test's with labels.
func (e *env) namespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: e.id + "-", Labels: labels}}
	managertest.Create(t, e.c, ns)
	return ns.Name
}

// distribution creates a distribution of the test's of resource (JSON) to targets, validated as the webhook
// would, and deletes it when the test ends.
func (e *env) distribution(t *testing.T, resource string, targets kruiseappsv1alpha1.ResourceDistributionTargets) *kruiseappsv1alpha1.ResourceDistribution {
	t.Helper()
	rd := &kruiseappsv1alpha1.ResourceDistribution{ObjectMeta: metav1.ObjectMeta{Name: e.id, Labels: map[string]string{testLabel: e.id}}}
	rd.Spec.Resource.Raw = []byte(resource)
	rd.Spec.Targets = targets
	if errs := admission.Validate(rd, nil); len(errs) > 0 {
		t.Fatalf("the webhook would refuse the distribution: %v", errs)
	}
	managertest.Create(t, e.c, rd)
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), rd) })
	return rd
}

// configMap is a ConfigMap resource named name with data.
func configMap(name string, data map[string]string) string {
	raw := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"labels":{"app":"game"}},"data":{`, name)
	sep := ""
	for k, v := range data {
		raw += fmt.Sprintf(`%s%q:%q`, sep, k, v)
		sep = ","
	}
	return raw + "}}"
}

func list(names ...string) kruiseappsv1alpha1.ResourceDistributionTargetNamespaces {
	out := kruiseappsv1alpha1.ResourceDistributionTargetNamespaces{}
	for _, n := range names {
		out.List = append(out.List, kruiseappsv1alpha1.ResourceDistributionNamespace{Name: n})
	}
	return out
}

func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	managertest.Eventually(t, itTimeout, what, cond)
}

// waitStatus waits until the distribution's status satisfies done and returns the distribution.
func (e *env) waitStatus(t *testing.T, rd *kruiseappsv1alpha1.ResourceDistribution, what string,
	done func(kruiseappsv1alpha1.ResourceDistributionStatus) bool) *kruiseappsv1alpha1.ResourceDistribution {
	t.Helper()
	got := &kruiseappsv1alpha1.ResourceDistribution{}
	eventually(t, what, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(rd), got); err != nil {
			return false, err
		}
		s := got.Status
		return done(s), fmt.Errorf("desired %d succeeded %d failed %d observedGeneration %d conditions %+v",
			s.Desired, s.Succeeded, s.Failed, s.ObservedGeneration, s.Conditions)
	})
	return got
}

// configMapIn is a namespace's ConfigMap of name: nil if there is none.
func (e *env) configMapIn(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cm, err
}

// waitConfigMap waits until the namespace's ConfigMap of name satisfies done (nil: there is none).
func (e *env) waitConfigMap(t *testing.T, ns, name, what string, done func(*corev1.ConfigMap) bool) {
	t.Helper()
	eventually(t, what, func(ctx context.Context) (bool, error) {
		cm, err := e.configMapIn(ctx, ns, name)
		if err != nil {
			return false, err
		}
		if cm == nil {
			return done(nil), fmt.Errorf("no ConfigMap %s/%s", ns, name)
		}
		return done(cm), fmt.Errorf("ConfigMap %s/%s: data %v labels %v annotations %v owners %v", ns, name, cm.Data, cm.Labels,
			cm.Annotations, cm.OwnerReferences)
	})
}

// update changes the distribution with mutate, retrying on conflicts.
func (e *env) update(t *testing.T, rd *kruiseappsv1alpha1.ResourceDistribution, mutate func(*kruiseappsv1alpha1.ResourceDistribution)) {
	t.Helper()
	managertest.Update(t, e.c, rd.DeepCopy(), mutate)
}

// condition is the status's condition of type ct.
func condition(s kruiseappsv1alpha1.ResourceDistributionStatus, ct kruiseappsv1alpha1.ResourceDistributionConditionType) *kruiseappsv1alpha1.ResourceDistributionCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == ct {
			return &s.Conditions[i]
		}
	}
	return nil
}

// namedNamespace creates the namespace name, deleted when the test ends.
func (e *env) namedNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	managertest.Create(t, e.c, ns)
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), ns) })
}

// poke excludes one more namespace that does not exist: a new generation, which the controller reconciles.
func (e *env) poke(t *testing.T, rd *kruiseappsv1alpha1.ResourceDistribution) {
	t.Helper()
	name := fmt.Sprintf("%s-poke-%d", e.id, pokes.Add(1))
	e.update(t, rd, func(rd *kruiseappsv1alpha1.ResourceDistribution) {
		rd.Spec.Targets.ExcludedNamespaces.List = append(rd.Spec.Targets.ExcludedNamespaces.List,
			kruiseappsv1alpha1.ResourceDistributionNamespace{Name: name})
	})
}
