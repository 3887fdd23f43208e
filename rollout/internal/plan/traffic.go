package plan

import (
	"slices"
	"time"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/trafficrouting"
)

// TrafficTaskKind names the network work a reconcile does before the Rollout is planned.
type TrafficTaskKind string

// The traffic tasks. Prepare and Route run during a step that routes traffic, Clear during a step that routes
// none (an A/B test followed by plain batches), the others are the finalising steps of the same names.
const (
	TrafficPrepare        TrafficTaskKind = "Prepare"
	TrafficRoute          TrafficTaskKind = "Route"
	TrafficClear          TrafficTaskKind = "Clear"
	TrafficRestoreService TrafficTaskKind = TrafficTaskKind(rolloutsv1beta1.FinalisingStepRestoreStableService)
	TrafficToStable       TrafficTaskKind = TrafficTaskKind(rolloutsv1beta1.FinalisingStepRouteTrafficToStable)
	TrafficRemoveCanary   TrafficTaskKind = TrafficTaskKind(rolloutsv1beta1.FinalisingStepRemoveCanaryService)
	TrafficToNew          TrafficTaskKind = TrafficTaskKind(rolloutsv1beta1.FinalisingStepRouteTrafficToNew)
)

// TrafficTask is the network work the current status asks for.
type TrafficTask struct {
	Kind TrafficTaskKind
	// Step is the 1-based step the task belongs to (0 for finalising tasks).
	Step int32
	// Routes are the step's routes (Route) or all traffic to the new revision (RouteTrafficToNew).
	Routes trafficrouting.Routes
	// StableRevision and CanaryRevision are the pod revisions the stable and canary Services select.
	StableRevision string
	CanaryRevision string
}

// TrafficObs is the outcome of a traffic task.
type TrafficObs struct {
	Task TrafficTask
	// Done: the network is as the task asks. It already was, or, for a prepare, the call's writes made it so;
	// routes a call changed are done only when a later call finds nothing to change.
	Done bool
	// Failure says why the task could not be carried out.
	Failure string
	// LastChange is when this Rollout's network was last changed, as far as the controller knows (zero:
	// not recently). Routes count as in place only a grace period after it.
	LastChange time.Time
}

// PlanTraffic is the traffic task of a Rollout's status, if any.
func PlanTraffic(st rolloutsv1beta1.RolloutStatus, spec rolloutsv1beta1.RolloutSpec) (TrafficTask, bool, error) {
	sub := st.GetSubStatus()
	if sub == nil || len(spec.Strategy.GetTrafficRoutings()) == 0 {
		return TrafficTask{}, false, nil
	}
	task := TrafficTask{StableRevision: sub.StableRevision, CanaryRevision: sub.PodTemplateHash}
	if sub.FinalisingStep != "" {
		return finalisingTask(task, sub.FinalisingStep)
	}
	if Aborted(st) {
		return finalisingTask(task, rolloutsv1beta1.FinalisingStepRouteTrafficToStable)
	}
	step, ok := stepAt(spec.Strategy.GetSteps(), sub.CurrentStepIndex)
	if !ok || st.Phase != rolloutsv1beta1.RolloutPhaseProgressing {
		return TrafficTask{}, false, nil
	}
	task.Step = sub.CurrentStepIndex
	return stepTask(task, step, sub.CurrentStepState)
}

func finalisingTask(task TrafficTask, step rolloutsv1beta1.FinalisingStepType) (TrafficTask, bool, error) {
	task.Kind = TrafficTaskKind(step)
	switch task.Kind {
	case TrafficRestoreService, TrafficToStable, TrafficRemoveCanary:
		return task, true, nil
	case TrafficToNew:
		all := int32(100)
		task.Routes = trafficrouting.Routes{Weight: &all}
		return task, true, nil
	default:
		return TrafficTask{}, false, nil
	}
}

func stepTask(task TrafficTask, step rolloutsv1beta1.CanaryStep, state rolloutsv1beta1.CanaryStepState) (TrafficTask, bool, error) {
	if !routesTraffic(step) {
		task.Kind = TrafficClear
		return task, true, nil
	}
	switch state {
	case rolloutsv1beta1.CanaryStepStateInit, rolloutsv1beta1.CanaryStepStateUpgrade:
		task.Kind = TrafficPrepare
	case rolloutsv1beta1.CanaryStepStateTrafficRouting:
		routes, err := trafficrouting.FromStrategy(step.TrafficRoutingStrategy)
		if err != nil {
			return TrafficTask{}, false, err
		}
		task.Kind, task.Routes = TrafficRoute, routes
	default:
		return TrafficTask{}, false, nil
	}
	return task, true, nil
}

// routesTraffic: the step sends some traffic to the new revision by weight or by match.
func routesTraffic(step rolloutsv1beta1.CanaryStep) bool {
	return step.Traffic != nil || len(step.Matches) > 0
}

// GracePeriod is the wait after every routing change of the Rollout's traffic routing.
func GracePeriod(spec rolloutsv1beta1.RolloutSpec) time.Duration {
	trs := spec.Strategy.GetTrafficRoutings()
	if len(trs) == 0 {
		return 0
	}
	return time.Duration(trs[0].GracePeriodSeconds) * time.Second
}

// trafficSettled reports whether the observed task of the given kinds for the current step (0 for
// finalising) is done and the grace period has passed since the last network change; when not, it says how
// long to wait.
func trafficSettled(d *RolloutDecision, w RolloutWorld, step int32, kinds ...TrafficTaskKind) bool {
	obs := w.Traffic
	if obs == nil || obs.Task.Step != step || !kindIn(obs.Task.Kind, kinds) {
		d.RequeueAfter = Soonest(d.RequeueAfter, trafficRecheck)
		return false
	}
	if obs.Failure != "" {
		reportTrafficFailure(d, obs.Failure)
		d.RequeueAfter = Soonest(d.RequeueAfter, trafficFailureRecheck)
		return false
	}
	grace := GracePeriod(w.Spec)
	if !obs.Done {
		d.RequeueAfter = Soonest(d.RequeueAfter, max(grace, trafficRecheck))
		return false
	}
	// A change this reconcile made is stamped after its Now: with no grace period there is nothing to wait for.
	if wait := obs.LastChange.Add(grace).Sub(w.Now); grace > 0 && !obs.LastChange.IsZero() && wait > 0 {
		d.RequeueAfter = Soonest(d.RequeueAfter, wait)
		return false
	}
	return true
}

// reportTrafficFailure stalls the Rollout with the network's error as its message.
func reportTrafficFailure(d *RolloutDecision, failure string) {
	msg := "traffic routing failed: " + failure
	d.Status.Message = msg
	d.Health = Health{Stalled: true, Reason: ReasonTrafficFailed, Message: msg}
}

// trafficRecheck is how soon a task whose outcome this reconcile did not observe runs; the status write that
// asked for it usually triggers the next reconcile first. trafficFailureRecheck paces retries of a failing task.
const (
	trafficRecheck        = 100 * time.Millisecond
	trafficFailureRecheck = 3 * time.Second
)

func kindIn(k TrafficTaskKind, kinds []TrafficTaskKind) bool {
	for _, want := range kinds {
		if k == want {
			return true
		}
	}
	return false
}

// Soonest combines two requeue delays, where zero means none.
func Soonest(current, d time.Duration) time.Duration {
	if current == 0 || (d > 0 && d < current) {
		return d
	}
	return current
}

// ChainTraffic plans again, as the next reconcile would, after running at once (run) the traffic task a
// finalising decision moves to, for as long as each such task finds the network as it wants it: restoring a
// network that is already restored (a last step that routed nothing did it) then costs one status write and
// one reconcile, not one per step. A task that changes something, or fails, ends the chain, and its step
// waits for the next reconcile as before. Only finalising steps chain: each restores towards the stable
// network, so a task run before its step is recorded is harmless should the status write never happen.
func ChainTraffic(d RolloutDecision, w RolloutWorld, run func(rolloutsv1beta1.RolloutStatus) *TrafficObs) RolloutDecision {
	for range maxTransitions {
		if !chainable(d, w) {
			return d
		}
		obs := run(d.Status)
		if obs == nil {
			return d
		}
		// A task that changed something or failed is planned on as the next reconcile would (a grace period,
		// a failure reported), and chains no further: the world has run the task its step asks for.
		w.Traffic = obs
		next := PlanRollout(d.Status, w)
		next.Events = slices.Concat(d.Events, next.Events)
		d = next
	}
	return d
}

// chainable: d moves to a finalising step whose traffic task the world has not run yet, and asks for nothing
// else that the next reconcile would observe (a BatchRelease write, the end of the release).
func chainable(d RolloutDecision, w RolloutWorld) bool {
	sub := d.Status.GetSubStatus()
	if sub == nil || sub.FinalisingStep == "" || d.waiting || d.Plan != nil || d.DeleteBatch || d.RemoveFinalizer || d.Finished != "" {
		return false
	}
	task, ok, err := PlanTraffic(d.Status, w.Spec)
	return ok && err == nil && (w.Traffic == nil || w.Traffic.Task.Kind != task.Kind || w.Traffic.Task.Step != task.Step)
}
