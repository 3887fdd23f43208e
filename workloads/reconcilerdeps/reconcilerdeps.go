// Package reconcilerdeps holds what nearly every controller's Reconciler takes from the manager: a client, an
// event recorder and a clock. Tests set them in the struct literal (a fake clock, a client of their own);
// SetupWithManager fills the rest from the manager, the same way for every module, so that a controller's
// defaults cannot drift from its neighbours' (one forgetting the event budget, another the real clock).
// Dependencies of one module only (an API reader, expectations, HTTP clients) stay in that module.
package reconcilerdeps

import (
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/flotilla-dev/flotilla/workloads/eventbudget"
)

// Deps is embedded in a Reconciler; its fields are promoted, so the controller reads r.Client, r.Recorder
// and r.Clock directly, and SetupWithManager calls r.Default.
type Deps struct {
	// Client reads from the manager's cache and writes.
	Client client.Client
	// Recorder records events.
	Recorder events.EventRecorder
	// Clock gives every time a controller stamps or compares, so that tests can step a fake one.
	Clock clock.PassiveClock
}

// Manager is the part of ctrl.Manager that Default reads.
type Manager interface {
	GetClient() client.Client
	GetEventRecorder(name string) recorder.EventRecorder
}

// Default fills what is unset: the manager's client, its recorder for controllerName behind an event budget
// (eventbudget: per-pod events fold into a series past the first ten, as client-go's correlator does), and
// the real clock. A controller that records without the budget sets Recorder before calling it.
func (d *Deps) Default(mgr Manager, controllerName string) {
	if d.Client == nil {
		d.Client = mgr.GetClient()
	}
	if d.Recorder == nil {
		d.Recorder = eventbudget.New(mgr.GetEventRecorder(controllerName))
	}
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
}
