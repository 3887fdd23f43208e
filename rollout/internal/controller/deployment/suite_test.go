package deployment

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

func TestMain(m *testing.M) {
	flag.Parse()
	logf.SetLogger(testLogger())
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

// testLogger shows the controller's logs with -v and drops them otherwise.
func testLogger() logr.Logger {
	if testing.Verbose() {
		return zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr))
	}
	return logr.Discard()
}

// startManager runs the Advanced Deployment controller in-process until the test ends. It returns the
// manager's cached client, the one the release engine uses too, and a direct client for assertions.
func startManager(t *testing.T) (cached, direct client.Client) {
	t.Helper()
	if clusterConfig == nil {
		t.Skip("no control plane in -short mode")
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(clusterConfig, manager.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetupWithManager(mgr); err != nil {
		t.Fatal(err)
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
	syncCtx, cancelSync := context.WithTimeout(ctx, 30*time.Second)
	defer cancelSync()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("manager cache did not sync")
	}
	direct, err = client.New(clusterConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return mgr.GetClient(), direct
}
