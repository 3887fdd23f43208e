// Package e2e runs user stories against a full local cluster (etcd,
// apiserver, controller-manager, scheduler, simulated nodes) with
// flotilla-manager running as its own process, so webhooks and conversion
// are called by the apiserver over TLS exactly as in a real installation.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/format"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// clientTimeout bounds every API call the specs make.
const clientTimeout = 30 * time.Second

// Shared by every spec; set once by BeforeSuite.
var (
	testCluster *cluster.Cluster
	manager     *framework.Manager
	kube        kubernetes.Interface
	dyn         dynamic.Interface
	crds        apiextensionsclient.Interface
	disco       discovery.DiscoveryInterface
	mapper      meta.RESTMapper
	anyFailed   bool
	// laterWorkDirs belong to managers started after the suite's first one; they go when the suite ends.
	laterWorkDirs []string
)

func TestE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e suite starts a cluster; skipped in -short mode")
	}
	RegisterFailHandler(Fail)
	format.RegisterCustomFormatter(errorText)
	RunSpecs(t, "Flotilla e2e")
}

// errorText shows API errors by their message instead of a dump of the
// Status struct.
func errorText(v any) (string, bool) {
	if err, ok := v.(error); ok {
		return err.Error(), true
	}
	return "", false
}

var _ = BeforeSuite(func(ctx SpecContext) {
	// Both the cluster and the manager outlive ctx; they end in DeferCleanup.
	By("starting the local cluster")
	root, err := cluster.RepoRoot()
	failOnError(err, "finding the repository")
	c, err := cluster.Start(ctx, cluster.Options{
		// Flotilla's CRDs, and stand-ins for Istio's that the Lua traffic provider changes.
		CRDDirs:           []string{filepath.Join(root, "charts/flotilla/crds"), filepath.Join(root, "trafficrouting/custom/testdata/crds")},
		ControllerManager: true,
		GatewayAPI:        true,
		Scheduler:         true,
		Nodes:             3,
		Log:               GinkgoWriter,
	})
	failOnError(err, "starting the cluster")
	DeferCleanup(c.Stop)
	// Cleanups run last in, first out: the logs are copied before the cluster stops.
	DeferCleanup(keepClusterLogs, c)
	DeferCleanup(removeBuilt)
	testCluster = c
	failOnError(newClients(c.Config()), "creating clients")

	By("building and starting flotilla-manager")
	workDir, err := os.MkdirTemp("", "flotilla-e2e-")
	failOnError(err, "creating the work directory")
	DeferCleanup(removeUnlessFailed, workDir)
	DeferCleanup(func() {
		for _, dir := range laterWorkDirs {
			removeUnlessFailed(dir)
		}
	})
	m, err := startManager(ctx, workDir, "")
	failOnError(err, "starting flotilla-manager")
	manager = m
	GinkgoWriter.Printf("flotilla-manager log: %s\n", m.LogPath)
	DeferCleanup(stopManager)
}, NodeTimeout(8*time.Minute))

// startManager starts flotilla-manager against the suite's cluster; binary "" builds it into workDir. It runs
// as the chart installs it, as the service account flotilla-manager of flotilla-system: API Priority and
// Fairness files its requests as an installed controller's, and the workload webhooks spare its own writes.
// suiteManagerArgs are the flags of every manager the suite starts, restarts included. The ResourceDistribution
// and deletion protection stories and the ImagePullJob seed examples (refused for what they hold, not for the
// gate) need their gates, off by default as upstream's. FLOTILLA_E2E_MANAGER_ARGS adds flags, e.g.
// --zap-log-level=debug to log every reconcile's decision when a story needs explaining.
func suiteManagerArgs() []string {
	return append([]string{"--feature-gates=ResourceDistributionGate=true,ImagePullJobGate=true,ResourcesDeletionProtection=true"},
		strings.Fields(os.Getenv("FLOTILLA_E2E_MANAGER_ARGS"))...)
}

// startManager starts a manager with the suite's flags and extraArgs after them.
func startManager(ctx context.Context, workDir, binary string, extraArgs ...string) (*framework.Manager, error) {
	extraArgs = append(suiteManagerArgs(), extraArgs...)
	kubeconfig, err := testCluster.ControllerKubeconfig(ctx)
	if err != nil {
		return nil, err
	}
	return framework.StartManager(ctx, framework.ManagerConfig{
		RestConfig:     testCluster.Config(),
		KubeconfigPath: kubeconfig,
		WorkDir:        workDir,
		Binary:         binary,
		ExtraArgs:      extraArgs,
	})
}

// failOnError fails with the error's text, which gomega would otherwise
// bury in a dump of the error's struct.
func failOnError(err error, what string) {
	GinkgoHelper()
	if err != nil {
		Fail(what + ": " + err.Error())
	}
}

// stopManager ends the manager and shows the end of its log when a spec
// failed.
func stopManager() {
	manager.Stop()
	if anyFailed {
		GinkgoWriter.Printf("last lines of %s:\n%s\n", manager.LogPath, manager.LogTail(60))
	}
}

// removeUnlessFailed keeps the manager's log and certificates for a failed
// run.
func removeUnlessFailed(workDir string) {
	if anyFailed {
		GinkgoWriter.Printf("kept %s\n", workDir)
		return
	}
	_ = os.RemoveAll(workDir)
}

// keepClusterLogs copies the control plane's and kwok's logs when a spec failed: what the scheduler and
// kube-controller-manager did is often the explanation.
func keepClusterLogs(c *cluster.Cluster) {
	if !anyFailed {
		return
	}
	dir, err := c.SaveLogs()
	if err != nil {
		GinkgoWriter.Printf("keeping the cluster's logs: %v\n", err)
		return
	}
	GinkgoWriter.Printf("cluster logs kept in %s\n", dir)
}

var _ = ReportAfterEach(func(r SpecReport) {
	if r.Failed() {
		anyFailed = true
	}
})

func newClients(cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = clientTimeout
	var err error
	if kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	if crds, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		return err
	}
	if disco, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		return err
	}
	mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	return nil
}
