package plan

import (
	"testing"
	"time"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func TestPlanTraffic(t *testing.T) {
	ab := replicas("1")
	ab.Matches = []rolloutsv1beta1.HttpRouteMatch{{Headers: []gatewayHeader{header("user-agent", "pc")}}}
	steps := []rolloutsv1beta1.CanaryStep{traffic("5%", "1"), ab, replicas("100%")}
	routed := rolloutsv1beta1.RolloutSpec{Strategy: rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{
		Steps: steps, TrafficRoutings: []rolloutsv1beta1.TrafficRoutingRef{{Service: "web"}},
	}}}
	plain := *routed.DeepCopy()
	plain.Strategy.Canary.TrafficRoutings = nil
	at := func(step int32, state rolloutsv1beta1.CanaryStepState, fin rolloutsv1beta1.FinalisingStepType) rolloutsv1beta1.RolloutStatus {
		return rolloutsv1beta1.RolloutStatus{Phase: rolloutsv1beta1.RolloutPhaseProgressing, CanaryStatus: &rolloutsv1beta1.CanaryStatus{
			CommonStatus: rolloutsv1beta1.CommonStatus{CurrentStepIndex: step, CurrentStepState: state, FinalisingStep: fin,
				StableRevision: "s", PodTemplateHash: "c"},
		}}
	}
	cases := []struct {
		name   string
		spec   rolloutsv1beta1.RolloutSpec
		status rolloutsv1beta1.RolloutStatus
		want   TrafficTaskKind
		routes string
	}{
		{"no traffic routing", plain, at(1, rolloutsv1beta1.CanaryStepStateTrafficRouting, ""), "", ""},
		{"no release", routed, rolloutsv1beta1.RolloutStatus{Phase: rolloutsv1beta1.RolloutPhaseHealthy}, "", ""},
		{"before the batch", routed, at(1, rolloutsv1beta1.CanaryStepStateUpgrade, ""), TrafficPrepare, ""},
		{"weight step", routed, at(1, rolloutsv1beta1.CanaryStepStateTrafficRouting, ""), TrafficRoute, "weight 5%"},
		{"paused after routing", routed, at(1, rolloutsv1beta1.CanaryStepStatePaused, ""), "", ""},
		{"match step", routed, at(2, rolloutsv1beta1.CanaryStepStateTrafficRouting, ""), TrafficRoute, "match header user-agent=pc"},
		{"step routing nothing", routed, at(3, rolloutsv1beta1.CanaryStepStateUpgrade, ""), TrafficClear, ""},
		{"step routing nothing, paused", routed, at(3, rolloutsv1beta1.CanaryStepStatePaused, ""), TrafficClear, ""},
		{"finalising services", routed, at(3, rolloutsv1beta1.CanaryStepStateCompleted, rolloutsv1beta1.FinalisingStepRestoreStableService), TrafficRestoreService, ""},
		{"finalising routes", routed, at(3, rolloutsv1beta1.CanaryStepStateCompleted, rolloutsv1beta1.FinalisingStepRouteTrafficToStable), TrafficToStable, ""},
		{"finalising to new", routed, at(3, rolloutsv1beta1.CanaryStepStateCompleted, rolloutsv1beta1.FinalisingStepRouteTrafficToNew), TrafficToNew, "weight 100%"},
		{"finalising the workload", routed, at(3, rolloutsv1beta1.CanaryStepStateCompleted, rolloutsv1beta1.FinalisingStepResumeWorkload), "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task, ok, err := PlanTraffic(c.status, c.spec)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (c.want != "") || task.Kind != c.want {
				t.Fatalf("task = %v (ok=%v), want %q", task.Kind, ok, c.want)
			}
			if c.routes != "" && task.Routes.String() != c.routes {
				t.Errorf("routes = %s, want %s", task.Routes, c.routes)
			}
			if ok && (task.StableRevision != "s" || task.CanaryRevision != "c") {
				t.Errorf("revisions = %q/%q, want s/c", task.StableRevision, task.CanaryRevision)
			}
		})
	}
}

func TestPlanTrafficRejectsBadWeight(t *testing.T) {
	step := traffic("150%", "1")
	spec := rolloutsv1beta1.RolloutSpec{Strategy: rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{
		Steps: []rolloutsv1beta1.CanaryStep{step}, TrafficRoutings: []rolloutsv1beta1.TrafficRoutingRef{{Service: "web"}},
	}}}
	st := rolloutsv1beta1.RolloutStatus{Phase: rolloutsv1beta1.RolloutPhaseProgressing, CanaryStatus: &rolloutsv1beta1.CanaryStatus{
		CommonStatus: rolloutsv1beta1.CommonStatus{CurrentStepIndex: 1, CurrentStepState: rolloutsv1beta1.CanaryStepStateTrafficRouting},
	}}
	if _, _, err := PlanTraffic(st, spec); err == nil {
		t.Fatal("a 150% weight was accepted")
	}
}

// A change the reconcile itself made is stamped after the reconcile's Now. With no grace period it is settled
// at once (the batch may grow in that same reconcile); with one, the wait counts from the change.
func TestTrafficSettledAfterItsOwnChange(t *testing.T) {
	now := time.Unix(1000, 0)
	changed := now.Add(5 * time.Millisecond)
	for _, tt := range []struct {
		name        string
		grace       int32
		want        bool
		wantRequeue time.Duration
	}{
		{name: "no grace period", grace: 0, want: true},
		{name: "a grace period", grace: 3, want: false, wantRequeue: 3*time.Second + 5*time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := RolloutWorld{Now: now, Spec: rolloutsv1beta1.RolloutSpec{Strategy: rolloutsv1beta1.RolloutStrategy{
				Canary: &rolloutsv1beta1.CanaryStrategy{TrafficRoutings: []rolloutsv1beta1.TrafficRoutingRef{{
					Service: "web", GracePeriodSeconds: tt.grace}}}}},
				Traffic: &TrafficObs{Task: TrafficTask{Kind: TrafficPrepare, Step: 1}, Done: true, LastChange: changed}}
			var d RolloutDecision
			if got := trafficSettled(&d, w, 1, TrafficPrepare); got != tt.want || d.RequeueAfter != tt.wantRequeue {
				t.Errorf("trafficSettled = %v, requeue %v; want %v, requeue %v", got, d.RequeueAfter, tt.want, tt.wantRequeue)
			}
		})
	}
}
