package trafficrouting

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
)

// Event reasons besides the phase names, which are the reasons of the Normal events of phase transitions.
const (
	ReasonInvalidSpec   = "InvalidSpec"
	ReasonTrafficFailed = "TrafficRoutingFailed"
)

// minRetry is the shortest wait after a change when the grace period is 0, so a change is always read back.
const minRetry = time.Second

// stage is what a TrafficRouting does in one reconcile, derived from its status phase and its metadata.
type stage int

const (
	// stageInitialize: new (or never found its objects); check that the providers' objects exist.
	stageInitialize stage = iota
	// stageIdle: Healthy and no Rollout drives it; nothing to do.
	stageIdle
	// stageRoute: a Rollout holds a progressing finalizer; apply spec.strategy.
	stageRoute
	// stageFinalize: no Rollout drives it any more; restore the original routes.
	stageFinalize
	// stageTerminate: deleted; restore the original routes, then let it go.
	stageTerminate
	// stageGone: deleted and its own finalizer already removed (a Rollout's finalizer may still hold it).
	stageGone
)

// call is the provider operation a stage makes.
type call int

const (
	callNone call = iota
	callInitialize
	// callRoute is EnsureRoutes with spec.strategy, or Finalize when the strategy routes nothing.
	callRoute
	callFinalize
)

// Facts is what one reconcile observed of a TrafficRouting and of its providers.
type Facts struct {
	Generation int64
	Deleting   bool
	// HasFinalizer: the TrafficRouting carries its own finalizer.
	HasFinalizer bool
	// Progressing: some Rollout holds a progressing.rollouts.kruise.io/<name> finalizer on it.
	Progressing bool
	// Routes describes spec.strategy ("weight 20%", ...); empty when it routes nothing.
	Routes string
	// Grace is objectRef[0].gracePeriodSeconds.
	Grace time.Duration
	// Now and LastChange (the last time a provider call changed something; zero if unknown) time the grace
	// period.
	Now, LastChange time.Time
	// Outcome is the result of the stage's provider call.
	Outcome Outcome
}

// Outcome is the result of one provider call.
type Outcome struct {
	// Done: the call found nothing to change.
	Done bool
	// Err failed the call; Invalid tells that it comes from the spec, so retrying cannot help.
	Err     error
	Invalid bool
}

// Decision is what one reconcile does.
type Decision struct {
	Status rolloutsv1alpha1.TrafficRoutingStatus
	// RemoveFinalizer lets a deleted TrafficRouting go.
	RemoveFinalizer bool
	RequeueAfter    time.Duration
	Events          []Event
	// Err is returned from the reconcile: a provider error to retry with backoff, or a terminal spec error.
	Err error
}

// Event is one event to record on the TrafficRouting.
type Event struct {
	Type, Reason, Note string
}

// Messages of the settled phases.
const (
	msgHealthy  = "TrafficRouting is Healthy"
	msgRestore  = "Restoring the original routes; waiting the grace period"
	msgRestored = "Original routes restored"
)

// stageOf derives the stage; any phase it does not know (or Terminating without a deletion) restores first,
// the safe way back to Healthy.
func stageOf(phase rolloutsv1alpha1.TrafficRoutingPhase, f Facts) stage {
	switch {
	case f.Deleting && !f.HasFinalizer:
		return stageGone
	case f.Deleting:
		return stageTerminate
	case phase == "" || phase == rolloutsv1alpha1.TrafficRoutingPhaseInitial:
		return stageInitialize
	case f.Progressing:
		return stageRoute
	case phase == rolloutsv1alpha1.TrafficRoutingPhaseHealthy:
		return stageIdle
	default:
		return stageFinalize
	}
}

// call is the provider operation of the stage.
func (s stage) call() call {
	switch s {
	case stageInitialize:
		return callInitialize
	case stageRoute:
		return callRoute
	case stageFinalize, stageTerminate:
		return callFinalize
	default:
		return callNone
	}
}

// Plan is the phase machine: from the current status and what the reconcile observed (including the outcome
// of the stage's provider call) to the new status, the finalizer, events and when to look again.
func Plan(st rolloutsv1alpha1.TrafficRoutingStatus, f Facts) Decision {
	d := Decision{Status: st}
	switch stageOf(st.Phase, f) {
	case stageGone:
		return d
	case stageInitialize:
		initialize(&d, f)
	case stageIdle:
		d.Status = settled(rolloutsv1alpha1.TrafficRoutingPhaseHealthy, msgHealthy, f)
	case stageRoute:
		route(&d, f)
	case stageFinalize:
		finalize(&d, f)
	case stageTerminate:
		terminate(&d, f)
	}
	if ev, ok := transition(st.Phase, d.Status); ok {
		d.Events = append([]Event{ev}, d.Events...)
	}
	return d
}

// initialize: Healthy once the providers find their objects; Initial, with the error, until then.
func initialize(d *Decision, f Facts) {
	if f.Outcome.Err != nil {
		d.Status.Phase = rolloutsv1alpha1.TrafficRoutingPhaseInitial
		fail(d, f.Outcome)
		return
	}
	d.Status = settled(rolloutsv1alpha1.TrafficRoutingPhaseHealthy, msgHealthy, f)
}

// route: Progressing from the moment a Rollout drives it; the message and observedGeneration tell when the
// routes of the current spec are in place.
func route(d *Decision, f Facts) {
	d.Status.Phase = rolloutsv1alpha1.TrafficRoutingPhaseProgressing
	if f.Outcome.Err != nil {
		fail(d, f.Outcome)
		return
	}
	msg := "Routing " + f.Routes
	if f.Routes == "" {
		msg = "spec.strategy routes nothing; the original routes are kept"
	}
	if wait := graceLeft(f); wait > 0 {
		d.Status.Message, d.RequeueAfter = msg+"; waiting the grace period", wait
		return
	}
	d.Status = settled(rolloutsv1alpha1.TrafficRoutingPhaseProgressing, msg, f)
}

// finalize: Finalizing until the providers restored everything and the grace period passed, then Healthy.
func finalize(d *Decision, f Facts) {
	d.Status.Phase = rolloutsv1alpha1.TrafficRoutingPhaseFinalizing
	if f.Outcome.Err != nil {
		fail(d, f.Outcome)
		return
	}
	if wait := graceLeft(f); wait > 0 {
		d.Status.Message, d.RequeueAfter = msgRestore, wait
		return
	}
	d.Status = settled(rolloutsv1alpha1.TrafficRoutingPhaseHealthy, msgHealthy, f)
}

// terminate: Terminating; the finalizer goes once the routes are restored. A spec that names no object the
// providers can restore lets it go at once rather than block the deletion forever.
func terminate(d *Decision, f Facts) {
	d.Status.Phase = rolloutsv1alpha1.TrafficRoutingPhaseTerminating
	switch wait := graceLeft(f); {
	case f.Outcome.Err != nil && f.Outcome.Invalid:
		d.Status.Message = "Nothing restored: " + f.Outcome.Err.Error()
		d.Events = append(d.Events, Event{corev1.EventTypeWarning, ReasonInvalidSpec, d.Status.Message})
		d.RemoveFinalizer = true
	case f.Outcome.Err != nil:
		fail(d, f.Outcome)
	case wait > 0:
		d.Status.Message, d.RequeueAfter = msgRestore, wait
	default:
		d.Status.Message = msgRestored
		d.RemoveFinalizer = true
	}
}

// settled is the status of a phase whose work is done: it has observed the current generation.
func settled(phase rolloutsv1alpha1.TrafficRoutingPhase, msg string, f Facts) rolloutsv1alpha1.TrafficRoutingStatus {
	return rolloutsv1alpha1.TrafficRoutingStatus{ObservedGeneration: f.Generation, Phase: phase, Message: msg}
}

// graceLeft is how long the routes have yet to settle: a call that changed something waits the whole grace
// period, one that changed nothing waits what is left of the grace period of the last change.
func graceLeft(f Facts) time.Duration {
	if !f.Outcome.Done {
		return max(f.Grace, minRetry)
	}
	if f.LastChange.IsZero() {
		return 0
	}
	return max(f.LastChange.Add(f.Grace).Sub(f.Now), 0)
}

// fail reports a provider error in the message and a Warning event, and returns it for a retry with backoff;
// an error of the spec is terminal: only a change of the spec can help.
func fail(d *Decision, o Outcome) {
	d.Status.Message = o.Err.Error()
	reason := ReasonTrafficFailed
	d.Err = fmt.Errorf("traffic routing: %w", o.Err)
	if o.Invalid {
		reason = ReasonInvalidSpec
		d.Err = reconcile.TerminalError(o.Err)
	}
	d.Events = append(d.Events, Event{corev1.EventTypeWarning, reason, d.Status.Message})
}

// transition is the Normal event of a phase change; the first Initial of a new object is none.
func transition(from rolloutsv1alpha1.TrafficRoutingPhase, to rolloutsv1alpha1.TrafficRoutingStatus) (Event, bool) {
	if from == to.Phase || to.Phase == rolloutsv1alpha1.TrafficRoutingPhaseInitial {
		return Event{}, false
	}
	if from == "" {
		from = rolloutsv1alpha1.TrafficRoutingPhaseInitial
	}
	return Event{corev1.EventTypeNormal, string(to.Phase), fmt.Sprintf("%s -> %s: %s", from, to.Phase, to.Message)}, true
}
