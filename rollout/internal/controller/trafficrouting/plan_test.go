package trafficrouting

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
)

const (
	initial     = rolloutsv1alpha1.TrafficRoutingPhaseInitial
	healthy     = rolloutsv1alpha1.TrafficRoutingPhaseHealthy
	progressing = rolloutsv1alpha1.TrafficRoutingPhaseProgressing
	finalizing  = rolloutsv1alpha1.TrafficRoutingPhaseFinalizing
	terminating = rolloutsv1alpha1.TrafficRoutingPhaseTerminating
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func status(phase rolloutsv1alpha1.TrafficRoutingPhase, gen int64, msg string) rolloutsv1alpha1.TrafficRoutingStatus {
	return rolloutsv1alpha1.TrafficRoutingStatus{Phase: phase, ObservedGeneration: gen, Message: msg}
}

// facts is a reconcile of generation 2 with its own finalizer, a 3s grace period, routing weight 20%, whose
// provider call changed nothing and no change before.
func facts(change func(*Facts)) Facts {
	f := Facts{Generation: 2, HasFinalizer: true, Routes: "weight 20%", Grace: 3 * time.Second, Now: now, Outcome: Outcome{Done: true}}
	if change != nil {
		change(&f)
	}
	return f
}

var (
	// errTerminal matches any reconcile.TerminalError.
	errTerminal = reconcile.TerminalError(nil)
	errMissing  = errors.New("VirtualService ns/web: not found")
	errInvalid  = errors.New("spec.objectRef is empty")
)

// changed: the call changed something just now.
func changed(f *Facts) { f.Outcome, f.LastChange = Outcome{}, now }

func normal(reason, note string) Event  { return Event{corev1.EventTypeNormal, reason, note} }
func warning(reason, note string) Event { return Event{corev1.EventTypeWarning, reason, note} }

type errKind int

const (
	noErr errKind = iota
	retryErr
	terminalErr
)

func kindOf(err error) errKind {
	switch {
	case err == nil:
		return noErr
	case errors.Is(err, errTerminal):
		return terminalErr
	default:
		return retryErr
	}
}

type want struct {
	Status  rolloutsv1alpha1.TrafficRoutingStatus
	Remove  bool
	Requeue time.Duration
	Events  []Event
	Err     errKind
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name string
		st   rolloutsv1alpha1.TrafficRoutingStatus
		f    Facts
		want want
	}{
		{"new, objects exist", status("", 0, ""), facts(nil), want{
			Status: status(healthy, 2, msgHealthy),
			Events: []Event{normal("Healthy", "Initial -> Healthy: "+msgHealthy)},
		}},
		{"new, object missing", status("", 0, ""), facts(func(f *Facts) { f.Outcome = Outcome{Err: errMissing} }), want{
			Status: status(initial, 0, errMissing.Error()),
			Events: []Event{warning(ReasonTrafficFailed, errMissing.Error())}, Err: retryErr,
		}},
		{"initial, invalid spec", status(initial, 0, "x"), facts(func(f *Facts) { f.Outcome = Outcome{Err: errInvalid, Invalid: true} }), want{
			Status: status(initial, 0, errInvalid.Error()),
			Events: []Event{warning(ReasonInvalidSpec, errInvalid.Error())}, Err: terminalErr,
		}},
		{"healthy, idle", status(healthy, 2, msgHealthy), facts(nil), want{Status: status(healthy, 2, msgHealthy)}},
		{"healthy, new generation", status(healthy, 1, msgHealthy), facts(nil), want{Status: status(healthy, 2, msgHealthy)}},
		{"a rollout arrives, routes changed", status(healthy, 2, msgHealthy), facts(func(f *Facts) { f.Progressing = true; changed(f) }), want{
			Status:  status(progressing, 2, "Routing weight 20%; waiting the grace period"),
			Requeue: 3 * time.Second,
			Events:  []Event{normal("Progressing", "Healthy -> Progressing: Routing weight 20%; waiting the grace period")},
		}},
		{"progressing within the grace period", status(progressing, 1, "Routing weight 20%; waiting the grace period"),
			facts(func(f *Facts) { f.Progressing, f.LastChange = true, now.Add(-time.Second) }), want{
				Status: status(progressing, 1, "Routing weight 20%; waiting the grace period"), Requeue: 2 * time.Second,
			}},
		{"progressing, routes settled", status(progressing, 1, "Routing weight 20%; waiting the grace period"),
			facts(func(f *Facts) { f.Progressing, f.LastChange = true, now.Add(-3*time.Second) }), want{
				Status: status(progressing, 2, "Routing weight 20%"),
			}},
		{"progressing, strategy routes nothing", status(progressing, 1, "Routing weight 20%"),
			facts(func(f *Facts) { f.Progressing, f.Routes = true, "" }), want{
				Status: status(progressing, 2, "spec.strategy routes nothing; the original routes are kept"),
			}},
		{"progressing, provider fails", status(progressing, 2, "Routing weight 20%"),
			facts(func(f *Facts) { f.Progressing, f.Outcome = true, Outcome{Err: errMissing} }), want{
				Status: status(progressing, 2, errMissing.Error()),
				Events: []Event{warning(ReasonTrafficFailed, errMissing.Error())}, Err: retryErr,
			}},
		{"rollout gone, routes restored now", status(progressing, 2, "Routing weight 20%"), facts(changed), want{
			Status: status(finalizing, 2, msgRestore), Requeue: 3 * time.Second,
			Events: []Event{normal("Finalizing", "Progressing -> Finalizing: "+msgRestore)},
		}},
		{"finalizing, settled", status(finalizing, 2, msgRestore), facts(func(f *Facts) { f.LastChange = now.Add(-5 * time.Second) }), want{
			Status: status(healthy, 2, msgHealthy),
			Events: []Event{normal("Healthy", "Finalizing -> Healthy: "+msgHealthy)},
		}},
		{"rollout gone, nothing was routed", status(progressing, 2, "Routing weight 20%"), facts(nil), want{
			Status: status(healthy, 2, msgHealthy),
			Events: []Event{normal("Healthy", "Progressing -> Healthy: "+msgHealthy)},
		}},
		{"finalizing, restore fails", status(finalizing, 2, msgRestore), facts(func(f *Facts) { f.Outcome = Outcome{Err: errMissing} }), want{
			Status: status(finalizing, 2, errMissing.Error()),
			Events: []Event{warning(ReasonTrafficFailed, errMissing.Error())}, Err: retryErr,
		}},
		{"finalizing, a rollout comes back", status(finalizing, 2, msgRestore), facts(func(f *Facts) { f.Progressing = true }), want{
			Status: status(progressing, 2, "Routing weight 20%"),
			Events: []Event{normal("Progressing", "Finalizing -> Progressing: Routing weight 20%")},
		}},
		{"unknown phase restores first", status("Weird", 1, ""), facts(nil), want{
			Status: status(healthy, 2, msgHealthy),
			Events: []Event{normal("Healthy", "Weird -> Healthy: "+msgHealthy)},
		}},
		{"no grace period still reads the change back", status(healthy, 2, msgHealthy),
			facts(func(f *Facts) { f.Progressing, f.Grace = true, 0; changed(f) }), want{
				Status: status(progressing, 2, "Routing weight 20%; waiting the grace period"), Requeue: minRetry,
				Events: []Event{normal("Progressing", "Healthy -> Progressing: Routing weight 20%; waiting the grace period")},
			}},
		{"deleted, routes restored now", status(progressing, 2, "Routing weight 20%"), facts(func(f *Facts) { f.Deleting = true; changed(f) }), want{
			Status: status(terminating, 2, msgRestore), Requeue: 3 * time.Second,
			Events: []Event{normal("Terminating", "Progressing -> Terminating: "+msgRestore)},
		}},
		{"deleted, settled", status(terminating, 2, msgRestore), facts(func(f *Facts) { f.Deleting, f.LastChange = true, now.Add(-3*time.Second) }), want{
			Status: status(terminating, 2, msgRestored), Remove: true,
		}},
		{"deleted while a rollout still holds it", status(progressing, 2, "Routing weight 20%"),
			facts(func(f *Facts) { f.Deleting, f.Progressing = true, true }), want{
				Status: status(terminating, 2, msgRestored), Remove: true,
				Events: []Event{normal("Terminating", "Progressing -> Terminating: "+msgRestored)},
			}},
		{"deleted, invalid spec lets it go", status(initial, 0, "x"),
			facts(func(f *Facts) { f.Deleting, f.Outcome = true, Outcome{Err: errInvalid, Invalid: true} }), want{
				Status: status(terminating, 0, "Nothing restored: "+errInvalid.Error()), Remove: true,
				Events: []Event{
					normal("Terminating", "Initial -> Terminating: Nothing restored: "+errInvalid.Error()),
					warning(ReasonInvalidSpec, "Nothing restored: "+errInvalid.Error()),
				},
			}},
		{"deleted, restore fails", status(healthy, 2, msgHealthy), facts(func(f *Facts) { f.Deleting, f.Outcome = true, Outcome{Err: errMissing} }), want{
			Status: status(terminating, 2, errMissing.Error()),
			Events: []Event{
				normal("Terminating", "Healthy -> Terminating: "+errMissing.Error()),
				warning(ReasonTrafficFailed, errMissing.Error()),
			},
			Err: retryErr,
		}},
		{"deleted, own finalizer gone", status(terminating, 2, msgRestored), facts(func(f *Facts) { f.Deleting, f.HasFinalizer = true, false }), want{
			Status: status(terminating, 2, msgRestored),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Plan(tt.st, tt.f)
			got := want{Status: d.Status, Remove: d.RemoveFinalizer, Requeue: d.RequeueAfter, Events: d.Events, Err: kindOf(d.Err)}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStageCalls(t *testing.T) {
	tests := []struct {
		name  string
		phase rolloutsv1alpha1.TrafficRoutingPhase
		f     Facts
		want  call
	}{
		{"new", "", Facts{}, callInitialize},
		{"initial with a rollout waits for its objects", initial, Facts{Progressing: true}, callInitialize},
		{"healthy", healthy, Facts{}, callNone},
		{"healthy with a rollout", healthy, Facts{Progressing: true}, callRoute},
		{"progressing", progressing, Facts{Progressing: true}, callRoute},
		{"progressing, rollout gone", progressing, Facts{}, callFinalize},
		{"finalizing", finalizing, Facts{}, callFinalize},
		{"deleted", healthy, Facts{Deleting: true, HasFinalizer: true, Progressing: true}, callFinalize},
		{"deleted, released", terminating, Facts{Deleting: true}, callNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stageOf(tt.phase, tt.f).call(); got != tt.want {
				t.Errorf("call = %v, want %v", got, tt.want)
			}
		})
	}
}
