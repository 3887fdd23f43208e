package plan

import (
	"k8s.io/apimachinery/pkg/api/equality"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Settled reports whether planning again from d's status, in the world d was planned in, decides nothing d
// does not: the same status, plan and requests, and no event. The watch event of d's own status write then
// brings the Rollout nothing to plan (what d changes elsewhere brings events of its own). Only worlds whose
// reads do not depend on the status qualify: no analysis (read for the current step), and no traffic task
// but the one d's status asks for, already run and found done (a task that changed the network or failed
// runs again on the next reconcile).
func Settled(d RolloutDecision, w RolloutWorld) bool {
	if w.Analysis != nil || !trafficRan(d.Status, w) {
		return false
	}
	next := PlanRollout(d.Status, w)
	return len(next.Events) == 0 && next.Finished == "" &&
		next.DeleteBatch == d.DeleteBatch && next.ReleaseWorkload == d.ReleaseWorkload && next.RemoveFinalizer == d.RemoveFinalizer &&
		equality.Semantic.DeepEqual(next.Plan, d.Plan) && equality.Semantic.DeepEqual(next.Status, d.Status)
}

// trafficRan: the traffic task of st, if any, is the one the world ran, and it found the network done.
func trafficRan(st rolloutsv1beta1.RolloutStatus, w RolloutWorld) bool {
	task, ok, err := PlanTraffic(st, w.Spec)
	if err != nil {
		return false
	}
	if !ok {
		return w.Traffic == nil
	}
	ran := w.Traffic
	return ran != nil && ran.Done && ran.Failure == "" && ran.Task.Kind == task.Kind && ran.Task.Step == task.Step
}
