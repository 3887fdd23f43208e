package deployment

import (
	"errors"
	"os"
	"testing"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/rollout/control"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

func TestMain(m *testing.M) {
	opts := cluster.Options{
		ControllerManager: true,
		Controllers:       []string{"deployment-controller", "replicaset-controller", "serviceaccount-controller"},
		Scheduler:         true,
		Nodes:             2,
	}
	os.Exit(managertest.Main(m, opts, &clusterConfig))
}

// startManager runs the Advanced Deployment controller in-process until the test ends. It returns the
// manager's cached client, the one the release engine uses too, and a direct client for assertions.
func startManager(t *testing.T) (cached, direct client.Client) {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme)
	mgr := managertest.Start(t, clusterConfig, scheme, func(mgr ctrl.Manager) error {
		return errors.Join(control.IndexReplicaSets(mgr), SetupWithManager(mgr))
	})
	return mgr.GetClient(), managertest.DirectClient(t, clusterConfig, scheme)
}
