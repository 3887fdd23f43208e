package controller

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	opts := cluster.Options{
		ControllerManager: true,
		Controllers:       []string{"garbage-collector-controller", "serviceaccount-controller"},
		Scheduler:         true,
		Nodes:             2,
	}
	os.Exit(managertest.Main(m, opts, &clusterConfig))
}

func testScheme(t *testing.T) *runtime.Scheme {
	return managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme)
}

// startController runs the CloneSet and pod readiness controllers in-process until the test ends and
// returns a direct client for the test's own reads and writes.
func startController(t *testing.T, configure ...func(*Reconciler)) client.Client {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := testScheme(t)
	r := &Reconciler{}
	for _, c := range configure {
		c(r)
	}
	managertest.Start(t, clusterConfig, scheme, func(mgr ctrl.Manager) error {
		return errors.Join(r.SetupWithManager(mgr), podreadiness.SetupWithManager(mgr))
	})
	return managertest.DirectClient(t, clusterConfig, scheme)
}

// eventually polls cond until it holds; what names the state in the failure.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	managertest.Eventually(t, itTimeout, what, cond)
}
