package sidecarset

import (
	"testing"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// addCounter counts the runnables (controllers) a setup adds to its manager.
type addCounter struct {
	manager.Manager
	added int
}

func (m *addCounter) Add(r manager.Runnable) error {
	m.added++
	return m.Manager.Add(r)
}

// The sidecar terminator runs only with the SidecarTerminator gate on; it is off by default. The manager is
// never started: registering needs no API server.
func TestTerminatorFollowsItsGate(t *testing.T) {
	gate, err := feature.NewGate()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		set   string
		added int
	}{{"", 0}, {"SidecarTerminator=false", 0}, {"SidecarTerminator=true", 1}} {
		if tc.set != "" {
			if err := gate.Set(tc.set); err != nil {
				t.Fatal(err)
			}
		}
		mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
			Scheme:  managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme),
			Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		})
		if err != nil {
			t.Fatal(err)
		}
		counting := &addCounter{Manager: mgr}
		if err := setupTerminator(counting, feature.Resolve(gate)); err != nil {
			t.Fatal(err)
		}
		if counting.added != tc.added {
			t.Errorf("gates %q: %d controllers added, want %d", tc.set, counting.added, tc.added)
		}
	}
}
