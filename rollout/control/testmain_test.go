package control_test

import (
	"os"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

// clusterConfig is nil with -short: the integration tests skip.
var clusterConfig *rest.Config

// TestMain runs one local control plane for the package's integration tests: the workload controllers whose
// workloads the controls drive, a scheduler and two simulated nodes.
func TestMain(m *testing.M) {
	opts := cluster.Options{
		ControllerManager: true, Scheduler: true, Nodes: 2,
		Controllers: []string{
			"statefulset-controller", "daemonset-controller", "deployment-controller", "replicaset-controller",
			// Pods in a new namespace need its default ServiceAccount.
			"serviceaccount-controller",
		},
	}
	os.Exit(managertest.Main(m, opts, &clusterConfig))
}
