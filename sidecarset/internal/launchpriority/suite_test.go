package launchpriority

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/workloads/podcache"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// TestMain runs one control plane for the package. It has no nodes: the tests' pods stay unscheduled and the
// tests write their container statuses, playing a kubelet that starts a container once its key exists.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &clusterConfig))
}

// start creates a namespace and runs the controller with the manager's cache setup: pods slimmed as the
// manager slims them, ConfigMaps cached from another namespace only.
func start(t *testing.T) (client.Client, string) {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme)
	c := managertest.DirectClient(t, clusterConfig, scheme)
	ns := managertest.NamespaceWithServiceAccount(t, c, "clp")
	managertest.Start(t, clusterConfig, scheme, (&Reconciler{}).SetupWithManager, func(o *ctrl.Options) {
		o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
		o.Cache.ByObject = map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{metav1.NamespaceSystem: {}}},
			&corev1.Pod{}:       {Transform: podcache.Transform(nil)},
		}
	})
	return c, ns
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
