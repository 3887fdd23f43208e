package deployment

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

func TestMain(m *testing.M) {
	flag.Parse()
	logf.SetLogger(managertest.Logger())
	if testing.Short() {
		os.Exit(m.Run())
	}
	crds, err := filepath.Abs("../../../../charts/flotilla/crds")
	if err != nil {
		crds = "../../../../charts/flotilla/crds"
	}
	opts := cluster.Options{
		CRDDirs:           []string{crds},
		ControllerManager: true,
		Controllers:       []string{"deployment-controller", "replicaset-controller", "serviceaccount-controller"},
		Scheduler:         true,
		Nodes:             2,
	}
	os.Exit(cluster.RunTests(m, opts, func(c *cluster.Cluster) { clusterConfig = c.Config() }))
}

// startManager runs the Advanced Deployment controller in-process until the test ends. It returns the
// manager's cached client, the one the release engine uses too, and a direct client for assertions.
func startManager(t *testing.T) (cached, direct client.Client) {
	t.Helper()
	if clusterConfig == nil {
		t.Skip("no control plane in -short mode")
	}
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme)
	mgr := managertest.Start(t, clusterConfig, scheme, SetupWithManager)
	return mgr.GetClient(), managertest.DirectClient(t, clusterConfig, scheme)
}
