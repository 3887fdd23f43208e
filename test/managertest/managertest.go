// Package managertest runs controller-runtime managers inside integration tests against the local control
// plane (test/cluster): one place for what every controller suite needs, so suites only say which
// controllers they set up.
package managertest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

// cacheSyncTimeout bounds the wait for a started manager's informers.
const cacheSyncTimeout = 30 * time.Second

// Start builds a manager for cfg with scheme, lets setup (nil for none) register controllers on it, and runs
// it until the test ends; a manager error then fails the test. It returns once the cache has synced, so
// the manager's client sees what existed before. Metrics and probes are off; configure (a binary's own cache
// selection, say) changes the options last.
func Start(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, setup func(ctrl.Manager) error,
	configure ...func(*ctrl.Options)) ctrl.Manager {
	t.Helper()
	opts := ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		// -count=N starts the same controllers again in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	for _, c := range configure {
		c(&opts)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		if err := setup(mgr); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	syncCtx, cancelSync := context.WithTimeout(ctx, cacheSyncTimeout)
	defer cancelSync()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("manager cache did not sync")
	}
	return mgr
}

// DirectClient is an uncached client for a test's own reads and writes.
func DirectClient(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Scheme builds a scheme from AddToScheme functions.
func Scheme(t testing.TB, adds ...func(*runtime.Scheme) error) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range adds {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// Logger writes the controllers' logs to stderr when the tests run with -v or FLOTILLA_TEST_LOG is set, and
// drops them otherwise.
func Logger() logr.Logger {
	if testing.Verbose() || os.Getenv("FLOTILLA_TEST_LOG") != "" {
		return zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr))
	}
	return logr.Discard()
}

// Main is the TestMain of a package whose integration tests run managers: it routes the controllers' logs
// (see Logger) and hands over to cluster.RunPackage.
func Main(m *testing.M, opts cluster.Options, cfg **rest.Config) int {
	flag.Parse()
	ctrl.SetLogger(Logger())
	return cluster.RunPackage(m, opts, cfg)
}

// Eventually polls cond every 200 ms until it holds, failing the test once timeout passes; the failure names
// what was awaited and the last error cond returned, which may describe the state it saw rather than a fault.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %v)", what, err, last)
	}
}

// Create creates obj, failing the test if that fails.
func Create(t testing.TB, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

// Update applies change to obj as the API server holds it and writes it, from a fresh read again after a
// conflict: the controllers under test may write the object (its status too) between the read and the write.
func Update[T client.Object](t testing.TB, c client.Client, obj T, change func(T)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change(obj)
		return c.Update(t.Context(), obj)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// RequireCluster skips the test when cfg is nil: the package runs without a control plane (-short).
func RequireCluster(t testing.TB, cfg *rest.Config) {
	t.Helper()
	if cfg == nil {
		t.Skip("no control plane in -short mode")
	}
}

// Namespace creates a namespace named prefix-<suffix>, the suffix the API server's: a test run again in the
// same process (-count) never meets its previous namespace, which may still be terminating.
func Namespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Create(t, c, ns)
	return ns.Name
}

// NamespaceWithServiceAccount is Namespace with the namespace's "default" ServiceAccount, which pod admission
// looks up: without a serviceaccount controller, nothing else creates it.
func NamespaceWithServiceAccount(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	ns := Namespace(t, c, prefix)
	Create(t, c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}})
	return ns
}

// pools and poolNodes number the pools and their nodes of the process, so that names never repeat.
var pools, poolNodes atomic.Int32

// NodePool adds n kwok nodes of one test's own to the cluster and returns the pool's name. Node i is
// <pool>-<i>, labelled pool=<pool> and index=<i>, and tainted taintKey=<pool>:NoSchedule so that only the
// test's pods, which tolerate taintKey, run there, and not the other tests' nor the cluster's own. The nodes
// go when the test ends.
func NodePool(t testing.TB, c client.Client, n int, taintKey string) string {
	t.Helper()
	pool := fmt.Sprintf("pool-%d", pools.Add(1))
	for i := range n {
		PoolNode(t, c, pool, i, taintKey)
	}
	return pool
}

// PoolNode adds node i to pool as NodePool does: a node that joins a test's pool later.
func PoolNode(t testing.TB, c client.Client, pool string, i int, taintKey string) *corev1.Node {
	t.Helper()
	// The index picks the node's address; from 1000 on it stays clear of the cluster's own nodes.
	node := cluster.KwokNode(fmt.Sprintf("%s-%d", pool, i), 1000+int(poolNodes.Add(1)), 0)
	node.Labels["pool"] = pool
	node.Labels["index"] = fmt.Sprint(i)
	node.Spec.Taints = []corev1.Taint{{Key: taintKey, Value: pool, Effect: corev1.TaintEffectNoSchedule}}
	Create(t, c, node)
	t.Cleanup(func() { _ = c.Delete(context.Background(), node) })
	return node
}
