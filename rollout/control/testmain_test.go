package control_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

// clusterConfig is nil with -short: the integration tests skip.
var clusterConfig *rest.Config

// TestMain runs one local control plane for the package's integration tests: the workload controllers whose
// workloads the controls drive, a scheduler and two simulated nodes.
func TestMain(m *testing.M) {
	flag.Parse()
	logf.SetLogger(managertest.Logger())
	if testing.Short() {
		os.Exit(m.Run())
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	opts := cluster.Options{
		CRDDirs:           []string{filepath.Join(root, "charts/flotilla/crds")},
		ControllerManager: true, Scheduler: true, Nodes: 2,
		Controllers: []string{
			"statefulset-controller", "daemonset-controller", "deployment-controller", "replicaset-controller",
			// Pods in a new namespace need its default ServiceAccount.
			"serviceaccount-controller",
		},
	}
	os.Exit(cluster.RunTests(m, opts, func(c *cluster.Cluster) { clusterConfig = c.Config() }))
}

// needCluster skips a test that needs the control plane when there is none.
func needCluster(t *testing.T) {
	t.Helper()
	if clusterConfig == nil {
		t.Skip("no control plane in -short mode")
	}
}
