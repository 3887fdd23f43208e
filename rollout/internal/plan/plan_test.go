package plan

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/google/go-cmp/cmp"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func TestScaledReplicas(t *testing.T) {
	for _, tc := range []struct {
		v     string
		total int32
		want  int32
	}{
		{"1", 10, 1}, {"50%", 10, 5}, {"100%", 10, 10}, {"15%", 10, 2}, {"20", 10, 10},
		{"1%", 3, 1}, {"0%", 10, 0}, {"bogus%", 10, 10}, {"50%", 0, 0},
	} {
		v := intstr.Parse(tc.v)
		if got := ScaledReplicas(&v, tc.total); got != tc.want {
			t.Errorf("ScaledReplicas(%s, %d) = %d, want %d", tc.v, tc.total, got, tc.want)
		}
	}
	if got := ScaledReplicas(nil, 7); got != 7 {
		t.Errorf("nil counts as the whole workload, got %d", got)
	}
}

func TestBatchReady(t *testing.T) {
	th := intstr.FromString("20%")
	for name, tc := range map[string]struct {
		in   ReadyInput
		want bool
	}{
		"all ready":                  {ReadyInput{Desired: 5, Updated: 5, UpdatedReady: 5}, true},
		"not all updated":            {ReadyInput{Desired: 5, Updated: 4, UpdatedReady: 4}, false},
		"one not ready":              {ReadyInput{Desired: 5, Updated: 5, UpdatedReady: 4}, false},
		"threshold excuses one":      {ReadyInput{Desired: 5, Updated: 5, UpdatedReady: 4, FailureThreshold: &th}, true},
		"threshold needs one ready":  {ReadyInput{Desired: 1, Updated: 1, UpdatedReady: 0, FailureThreshold: &th}, false},
		"empty batch":                {ReadyInput{Desired: 0}, true},
		"rollout-id labels missing":  {ReadyInput{Desired: 2, Updated: 2, UpdatedReady: 2, RolloutID: "r1", LabelledForRolloutID: 1}, false},
		"rollout-id labels complete": {ReadyInput{Desired: 2, Updated: 2, UpdatedReady: 2, RolloutID: "r1", LabelledForRolloutID: 2}, true},
	} {
		if got := BatchReady(tc.in); got != tc.want {
			t.Errorf("%s: BatchReady = %v, want %v", name, got, tc.want)
		}
	}
}

// ReadyWanted is exactly BatchReady's threshold on ready pods: one fewer can never make a batch ready, that
// many does once everything else is in place.
func TestReadyWantedIsBatchReadysThreshold(t *testing.T) {
	thresholds := []*intstr.IntOrString{nil, ptr.To(intstr.FromString("20%")), ptr.To(intstr.FromInt32(1)), ptr.To(intstr.FromString("50%"))}
	for _, th := range thresholds {
		for desired := int32(1); desired <= 12; desired++ {
			in := ReadyInput{Desired: desired, Updated: desired, FailureThreshold: th, RolloutID: "r", LabelledForRolloutID: desired}
			want := ReadyWanted(in)
			if want < 1 || want > desired {
				t.Fatalf("threshold %v, desired %d: ReadyWanted = %d", th, desired, want)
			}
			below, at := in, in
			below.UpdatedReady, at.UpdatedReady = want-1, want
			if BatchReady(below) || !BatchReady(at) {
				t.Errorf("threshold %v, desired %d: ready with %d = %v, with %d = %v", th, desired, want-1, BatchReady(below), want, BatchReady(at))
			}
			if ReadyWanted(at) != 0 {
				t.Errorf("threshold %v, desired %d: still wants ready pods with %d ready", th, desired, want)
			}
		}
	}
	if got := ReadyWanted(ReadyInput{}); got != 0 {
		t.Errorf("an empty batch wants %d ready pods", got)
	}
}

func TestRolloutHash(t *testing.T) {
	canary := func(steps ...rolloutsv1beta1.CanaryStep) rolloutsv1beta1.RolloutStrategy {
		return rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{Steps: steps}}
	}
	a := canary(replicas("1"), replicas("100%"))
	paused := canary(withPause(replicas("1"), 30), replicas("100%"))
	threshold := canary(replicas("1"), replicas("100%"))
	threshold.Canary.FailureThreshold = ptr.To(intstr.FromString("20%"))
	more := canary(replicas("2"), replicas("100%"))
	routed := canary(replicas("1"), replicas("100%"))
	routed.Canary.TrafficRoutings = []rolloutsv1beta1.TrafficRoutingRef{{Service: "web"}}
	if RolloutHash(a) != RolloutHash(paused) || RolloutHash(a) != RolloutHash(threshold) {
		t.Error("a pause or failureThreshold change must not change the hash")
	}
	if RolloutHash(a) == RolloutHash(more) || RolloutHash(a) == RolloutHash(routed) {
		t.Error("other replicas or other traffic routings must change the hash")
	}
	// Upstream's form: a hex SHA-256 mapped onto rand.SafeEncodeString's alphabet, which has no vowels.
	if h := RolloutHash(a); len(h) != 64 || strings.ContainsAny(h, "aeiou01") {
		t.Errorf("hash %q is not in upstream's form", h)
	}
	if RolloutHash(rolloutsv1beta1.RolloutStrategy{}) != "" {
		t.Error("an empty strategy has no hash")
	}
}

// A release in flight when Flotilla is upgraded carries the earlier form of the hash: it takes the new one
// without restarting its step.
func TestLegacyHashIsNotAPlanChange(t *testing.T) {
	s := newSim(t, replicas("1"), replicas("100%"))
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.reconcile("batch 1 ready")
	sub := s.status.GetSubStatus()
	sub.RolloutHash = legacyStepsHash(s.spec.Strategy.GetSteps())
	d := s.reconcile("upgraded")
	if got := s.status.GetSubStatus(); got.CurrentStepState != rolloutsv1beta1.CanaryStepStatePaused || got.RolloutHash != RolloutHash(s.spec.Strategy) {
		t.Errorf("after the upgrade: state %s, hash %q", got.CurrentStepState, got.RolloutHash)
	}
	if len(d.Events) != 0 {
		t.Errorf("events %q, want none", d.Events)
	}
}

func TestAdvanceJumps(t *testing.T) {
	steps := []rolloutsv1beta1.CanaryStep{replicas("1"), replicas("50%"), replicas("100%")}
	at := func(cur, next int32) rolloutsv1beta1.CommonStatus {
		return rolloutsv1beta1.CommonStatus{CurrentStepIndex: cur, NextStepIndex: next, CurrentStepState: rolloutsv1beta1.CanaryStepStatePaused}
	}
	for name, tc := range map[string]struct {
		st        rolloutsv1beta1.CommonStatus
		wantCur   int32
		wantNext  int32
		wantState rolloutsv1beta1.CanaryStepState
	}{
		"forward jump":        {at(1, 3), 3, -1, rolloutsv1beta1.CanaryStepStateUpgrade},
		"backward jump":       {at(3, 1), 1, 2, rolloutsv1beta1.CanaryStepStateUpgrade},
		"out of range":        {at(2, 9), 2, 3, rolloutsv1beta1.CanaryStepStatePaused},
		"zero is corrected":   {at(2, 0), 2, 3, rolloutsv1beta1.CanaryStepStatePaused},
		"self restarts":       {at(2, 2), 2, 3, rolloutsv1beta1.CanaryStepStateUpgrade},
		"carry on":            {at(2, 3), 2, 3, rolloutsv1beta1.CanaryStepStatePaused},
		"last 100% step ends": {at(3, -1), 3, -1, rolloutsv1beta1.CanaryStepStateCompleted},
		"negative is ignored": {at(1, -5), 1, 2, rolloutsv1beta1.CanaryStepStatePaused},
	} {
		res := Advance(tc.st, StepWorld{Now: t0, Steps: steps})
		got := res.Status
		if got.CurrentStepIndex != tc.wantCur || got.NextStepIndex != tc.wantNext || got.CurrentStepState != tc.wantState {
			t.Errorf("%s: got %d/%d %s, want %d/%d %s", name, got.CurrentStepIndex, got.NextStepIndex, got.CurrentStepState,
				tc.wantCur, tc.wantNext, tc.wantState)
		}
	}
}

// A jump written while a timed pause runs out wins: the release goes to the step named, and a jump to the
// current step starts its pause over instead of letting the old one end it.
func TestJumpWinsOverAnExpiringPause(t *testing.T) {
	steps := []rolloutsv1beta1.CanaryStep{withPause(replicas("1"), 10), withPause(replicas("50%"), 10), replicas("100%")}
	paused := func(next int32) rolloutsv1beta1.CommonStatus {
		return rolloutsv1beta1.CommonStatus{CurrentStepIndex: 1, NextStepIndex: next, CurrentStepState: rolloutsv1beta1.CanaryStepStatePaused,
			LastUpdateTime: ptrTime(t0)}
	}
	expired := t0.Add(10 * time.Second)
	w := StepWorld{Now: expired, Steps: steps, ReadyStep: 3, NoTraffic: true}
	if got := Advance(paused(3), w).Status; got.CurrentStepIndex != 3 {
		t.Errorf("jump to step 3 at the pause's end: at step %d %s", got.CurrentStepIndex, got.CurrentStepState)
	}
	res := Advance(paused(1), w)
	if got := res.Status; got.CurrentStepIndex != 1 || got.CurrentStepState != rolloutsv1beta1.CanaryStepStatePaused ||
		!got.LastUpdateTime.Time.Equal(expired) || res.RequeueAfter != 10*time.Second {
		t.Errorf("jump to the current step at the pause's end: step %d %s since %v, requeue %v; want step 1 paused 10s from %v",
			got.CurrentStepIndex, got.CurrentStepState, got.LastUpdateTime, res.RequeueAfter, expired)
	}
	if got := Advance(paused(2), w).Status; got.CurrentStepIndex != 2 {
		t.Errorf("no jump: the expired pause moves on to step 2, got %d", got.CurrentStepIndex)
	}
}

func TestAdvancePauses(t *testing.T) {
	last := rolloutsv1beta1.CommonStatus{CurrentStepIndex: 2, NextStepIndex: -1, CurrentStepState: rolloutsv1beta1.CanaryStepStateMetricsAnalysis}
	full := []rolloutsv1beta1.CanaryStep{replicas("1"), replicas("100%")}
	if got := Advance(last, StepWorld{Now: t0, Steps: full}).Status.CurrentStepState; got != rolloutsv1beta1.CanaryStepStateCompleted {
		t.Errorf("a canary's last 100%% step must not pause, got %s", got)
	}
	res := Advance(last, StepWorld{Now: t0, Steps: full, BlueGreen: true})
	if !res.AwaitingApproval {
		t.Errorf("a blue-green last step waits for approval, got %s", res.Status.CurrentStepState)
	}
	zero := []rolloutsv1beta1.CanaryStep{withPause(replicas("1"), 0), replicas("100%")}
	first := rolloutsv1beta1.CommonStatus{CurrentStepIndex: 1, NextStepIndex: 2, CurrentStepState: rolloutsv1beta1.CanaryStepStateMetricsAnalysis}
	if got := Advance(first, StepWorld{Now: t0, Steps: zero}).Status; got.CurrentStepIndex != 2 {
		t.Errorf("pause.duration 0 continues at once, got step %d %s", got.CurrentStepIndex, got.CurrentStepState)
	}
	routed := rolloutsv1beta1.CommonStatus{CurrentStepIndex: 1, NextStepIndex: 2, CurrentStepState: rolloutsv1beta1.CanaryStepStateTrafficRouting}
	if got := Advance(routed, StepWorld{Now: t0, Steps: zero, TrafficStep: 0}).Status.CurrentStepState; got != rolloutsv1beta1.CanaryStepStateTrafficRouting {
		t.Errorf("a step with routes waits for them, got %s", got)
	}
}

func TestKStatusConditionsKeepForeignOnes(t *testing.T) {
	foreign := rolloutsv1beta1.RolloutCondition{Type: "Stalled", Status: corev1.ConditionTrue, Reason: "GateClosed"}
	other := rolloutsv1beta1.RolloutCondition{Type: "example.com/Gate", Status: corev1.ConditionTrue, Reason: "Open"}
	conds := KStatusConditions([]rolloutsv1beta1.RolloutCondition{other}, Health{Reconciling: true, Reason: ReasonProgressing}, t0)
	if GetCondition(conds, "example.com/Gate") == nil {
		t.Fatal("a foreign condition was dropped")
	}
	conds = KStatusConditions(conds, Health{Stalled: true, Reason: ReasonBatchReleaseFailed}, t0.Add(time.Minute))
	if c := GetCondition(conds, ConditionStalled); c == nil || c.Reason != ReasonBatchReleaseFailed {
		t.Fatalf("Stalled = %+v", c)
	}
	if GetCondition(conds, ConditionReconciling) != nil {
		t.Error("Reconciling must be removed while stalled")
	}
	withForeign := append(RemoveCondition(conds, ConditionStalled), foreign)
	for _, h := range []Health{{Stalled: true, Reason: ReasonBatchReleaseFailed}, {Reconciling: true, Reason: ReasonProgressing}, {Reason: ReasonCompleted}} {
		got := KStatusConditions(withForeign, h, t0.Add(2*time.Minute))
		if c := GetCondition(got, ConditionStalled); c == nil || *c != foreign {
			t.Errorf("health %+v: a foreign Stalled condition became %+v", h, c)
		}
	}
	ready := GetCondition(conds, ConditionReady)
	again := KStatusConditions(conds, Health{Stalled: true, Reason: ReasonBatchReleaseFailed}, t0.Add(time.Hour))
	if GetCondition(again, ConditionReady).LastUpdateTime != ready.LastUpdateTime {
		t.Error("an unchanged condition must keep its timestamps")
	}
}

func TestFinalisingOrders(t *testing.T) {
	var got []rolloutsv1beta1.FinalisingStepType
	for s := NextFinalisingStep(rolloutsv1beta1.FinaliseReasonRollback, false, ""); s != rolloutsv1beta1.FinalisingStepTypeEnd; s = NextFinalisingStep(rolloutsv1beta1.FinaliseReasonRollback, false, s) {
		got = append(got, s)
	}
	if len(got) != 5 || got[0] != rolloutsv1beta1.FinalisingStepRouteTrafficToStable || got[4] != rolloutsv1beta1.FinalisingStepRemoveCanaryService {
		t.Errorf("rollback order = %v", got)
	}
	if s := NextFinalisingStep(rolloutsv1beta1.FinaliseReasonSuccess, true, ""); s != rolloutsv1beta1.FinalisingStepRouteTrafficToNew {
		t.Errorf("blue-green success starts with %s", s)
	}
	if s := NextFinalisingStep(rolloutsv1beta1.FinaliseReasonSuccess, false, "Bogus"); s != rolloutsv1beta1.FinalisingStepRestoreStableService {
		t.Errorf("an unknown step restarts the order, got %s", s)
	}
}

func brPlan(partition *int32, batches ...string) rolloutsv1beta1.ReleasePlan {
	p := rolloutsv1beta1.ReleasePlan{BatchPartition: partition}
	for _, b := range batches {
		p.Batches = append(p.Batches, rolloutsv1beta1.ReleaseBatch{CanaryReplicas: intstr.Parse(b)})
	}
	return p
}

// A batch given as a percentage of the workload passes its share to the control; a whole number, or a
// rollback in batches (whose percentage is of the pods moved back), passes none.
func TestBatchShare(t *testing.T) {
	p := brPlan(ptr.To[int32](2), "1", "50%", "100%")
	at := func(batch int32, noNeed *int32) rolloutsv1beta1.BatchReleaseCanaryStatus {
		return rolloutsv1beta1.BatchReleaseCanaryStatus{CurrentBatch: batch, NoNeedUpdateReplicas: noNeed}
	}
	if got := batchShare(p, at(1, nil)); got == nil || got.String() != "50%" {
		t.Errorf("batch 1 share = %v, want 50%%", got)
	}
	for name, cs := range map[string]rolloutsv1beta1.BatchReleaseCanaryStatus{
		"a whole number": at(0, nil), "a rollback in batches": at(1, ptr.To[int32](2)), "past the plan": at(5, nil),
	} {
		if got := batchShare(p, cs); got != nil {
			t.Errorf("%s: share %v, want none", name, got)
		}
	}
}

func TestPlanBatchRelease(t *testing.T) {
	p0 := brPlan(ptr.To[int32](0), "1", "50%", "100%")
	p1 := brPlan(ptr.To[int32](1), "1", "50%", "100%")
	aborted := brPlan(ptr.To[int32](1), "1", "0", "100%")
	wl := func(updated, ready int32) *WorkloadView {
		return &WorkloadView{Replicas: 10, Updated: updated, UpdatedReady: ready, StableRevision: "a", UpdateRevision: "b", Consistent: true}
	}
	progressing := func(batch int32, state rolloutsv1beta1.BatchReleaseBatchStateType, p rolloutsv1beta1.ReleasePlan) rolloutsv1beta1.BatchReleaseStatus {
		return rolloutsv1beta1.BatchReleaseStatus{
			Phase: rolloutsv1beta1.RolloutPhaseProgressing, StableRevision: "a", UpdateRevision: "b",
			ObservedWorkloadReplicas: 10, ObservedReleasePlanHash: ReleasePlanHash(p),
			CanaryStatus: rolloutsv1beta1.BatchReleaseCanaryStatus{CurrentBatch: batch, CurrentBatchState: state},
		}
	}
	for name, tc := range map[string]struct {
		st        rolloutsv1beta1.BatchReleaseStatus
		w         BatchWorld
		action    BatchAction
		desired   int32
		wantPhase rolloutsv1beta1.RolloutPhase
		wantBatch int32
		wantState rolloutsv1beta1.BatchReleaseBatchStateType
	}{
		"new release initializes": {rolloutsv1beta1.BatchReleaseStatus{}, BatchWorld{Plan: p0, Workload: wl(0, 0)},
			ActionInitialize, 0, rolloutsv1beta1.RolloutPhaseProgressing, 0, rolloutsv1beta1.UpgradingBatchState},
		"a control that can starts the batch as it initializes": {rolloutsv1beta1.BatchReleaseStatus{},
			BatchWorld{Plan: p0, BatchOnInitialize: true, Workload: wl(0, 0)},
			ActionInitializeBatch, 1, rolloutsv1beta1.RolloutPhaseProgressing, 0, rolloutsv1beta1.VerifyingBatchState},
		"initializing past the first batch starts the partition's": {rolloutsv1beta1.BatchReleaseStatus{},
			BatchWorld{Plan: p1, BatchOnInitialize: true, Workload: wl(0, 0)},
			ActionInitializeBatch, 5, rolloutsv1beta1.RolloutPhaseProgressing, 1, rolloutsv1beta1.VerifyingBatchState},
		"upgrading upgrades": {progressing(0, rolloutsv1beta1.UpgradingBatchState, p0), BatchWorld{Plan: p0, Workload: wl(0, 0)},
			ActionUpgrade, 1, rolloutsv1beta1.RolloutPhaseProgressing, 0, rolloutsv1beta1.VerifyingBatchState},
		"verifying waits": {progressing(0, rolloutsv1beta1.VerifyingBatchState, p0), BatchWorld{Plan: p0, Workload: wl(1, 0)},
			ActionNone, 0, rolloutsv1beta1.RolloutPhaseProgressing, 0, rolloutsv1beta1.VerifyingBatchState},
		"verifying waits for the workload controller": {progressing(0, rolloutsv1beta1.VerifyingBatchState, p0),
			BatchWorld{Plan: p0, Workload: &WorkloadView{Replicas: 10, Updated: 1, UpdatedReady: 1, UpdateRevision: "b"}},
			ActionNone, 0, rolloutsv1beta1.RolloutPhaseProgressing, 0, rolloutsv1beta1.VerifyingBatchState},
		"verified is ready": {progressing(0, rolloutsv1beta1.VerifyingBatchState, p0), BatchWorld{Plan: p0, Workload: wl(1, 1)},
			ActionNone, 0, rolloutsv1beta1.RolloutPhaseProgressing, 0, rolloutsv1beta1.ReadyBatchState},
		"ready stays within the partition": {progressing(0, rolloutsv1beta1.ReadyBatchState, p0), BatchWorld{Plan: p0, Workload: wl(1, 1)},
			ActionNone, 0, rolloutsv1beta1.RolloutPhaseProgressing, 0, rolloutsv1beta1.ReadyBatchState},
		"plan change recalculates": {progressing(0, rolloutsv1beta1.ReadyBatchState, p0), BatchWorld{Plan: p1, Workload: wl(1, 1)},
			ActionUpgrade, 5, rolloutsv1beta1.RolloutPhaseProgressing, 1, rolloutsv1beta1.VerifyingBatchState},
		"paced: a verified batch starts the next": {progressing(0, rolloutsv1beta1.VerifyingBatchState, p1), BatchWorld{Plan: p1, Workload: wl(1, 1)},
			ActionUpgrade, 5, rolloutsv1beta1.RolloutPhaseProgressing, 1, rolloutsv1beta1.VerifyingBatchState},
		"paced: a lead given keeps the batch": {progressing(0, rolloutsv1beta1.VerifyingBatchState, p0), BatchWorld{Plan: p1, Workload: wl(1, 0)},
			ActionNone, 0, rolloutsv1beta1.RolloutPhaseProgressing, 0, rolloutsv1beta1.VerifyingBatchState},
		"paced: a lead taken back keeps the batch": {progressing(0, rolloutsv1beta1.VerifyingBatchState, p1), BatchWorld{Plan: p0, Workload: wl(1, 1)},
			ActionNone, 0, rolloutsv1beta1.RolloutPhaseProgressing, 0, rolloutsv1beta1.ReadyBatchState},
		"a step jump restarts at the partition": {progressing(0, rolloutsv1beta1.VerifyingBatchState, p0),
			BatchWorld{Plan: brPlan(ptr.To[int32](2), "1", "50%", "100%"), Workload: wl(1, 0)},
			ActionUpgrade, 10, rolloutsv1beta1.RolloutPhaseProgressing, 2, rolloutsv1beta1.VerifyingBatchState},
		"scaling restarts the batch": {progressing(1, rolloutsv1beta1.ReadyBatchState, p1),
			BatchWorld{Plan: p1, Workload: &WorkloadView{Replicas: 20, Updated: 5, UpdatedReady: 5, UpdateRevision: "b", Consistent: true}},
			ActionUpgrade, 10, rolloutsv1beta1.RolloutPhaseProgressing, 1, rolloutsv1beta1.VerifyingBatchState},
		"new revision starts over": {progressing(1, rolloutsv1beta1.ReadyBatchState, p1),
			BatchWorld{Plan: p1, Workload: &WorkloadView{Replicas: 10, UpdateRevision: "c", Consistent: true}},
			ActionUpgrade, 1, rolloutsv1beta1.RolloutPhaseProgressing, 0, rolloutsv1beta1.VerifyingBatchState},
		"release all finalizes": {progressing(2, rolloutsv1beta1.ReadyBatchState, p1), BatchWorld{Plan: brPlan(nil, "1"), Workload: wl(10, 10)},
			ActionFinalize, 0, rolloutsv1beta1.RolloutPhaseFinalizing, 2, rolloutsv1beta1.ReadyBatchState},
		"deletion finalizes": {progressing(0, rolloutsv1beta1.VerifyingBatchState, p0), BatchWorld{Plan: p0, Deleting: true, Workload: wl(1, 1)},
			ActionFinalize, 0, rolloutsv1beta1.RolloutPhaseFinalizing, 0, rolloutsv1beta1.VerifyingBatchState},
		"aborted: asked again while new pods are left": {progressing(1, rolloutsv1beta1.VerifyingBatchState, aborted),
			BatchWorld{Plan: aborted, Workload: wl(3, 3)},
			ActionUpgrade, 0, rolloutsv1beta1.RolloutPhaseProgressing, 1, rolloutsv1beta1.VerifyingBatchState},
		"aborted: ready once they are gone": {progressing(1, rolloutsv1beta1.VerifyingBatchState, aborted),
			BatchWorld{Plan: aborted, Workload: wl(0, 0)},
			ActionNone, 0, rolloutsv1beta1.RolloutPhaseProgressing, 1, rolloutsv1beta1.ReadyBatchState},
		"gone workload completes": {progressing(0, rolloutsv1beta1.VerifyingBatchState, p0), BatchWorld{Plan: p0},
			ActionNone, 0, rolloutsv1beta1.RolloutPhaseCompleted, 0, rolloutsv1beta1.VerifyingBatchState},
	} {
		tc.w.Now = t0
		d := PlanBatchRelease(tc.st, tc.w)
		cs := d.Status.CanaryStatus
		if d.Action != tc.action || d.DesiredUpdated != tc.desired || d.Status.Phase != tc.wantPhase ||
			cs.CurrentBatch != tc.wantBatch || cs.CurrentBatchState != tc.wantState {
			t.Errorf("%s: got %q(%d) %s batch %d %s; want %q(%d) %s batch %d %s", name,
				d.Action, d.DesiredUpdated, d.Status.Phase, cs.CurrentBatch, cs.CurrentBatchState,
				tc.action, tc.desired, tc.wantPhase, tc.wantBatch, tc.wantState)
		}
	}
}

func FuzzAdvance(f *testing.F) {
	f.Add(int32(1), int32(2), "StepPaused", 3)
	f.Add(int32(-3), int32(99), "Bogus", 0)
	f.Fuzz(func(t *testing.T, cur, next int32, state string, n int) {
		n = max(min(n, 50), 0)
		steps := make([]rolloutsv1beta1.CanaryStep, n)
		for i := range steps {
			steps[i] = replicas("50%")
		}
		st := rolloutsv1beta1.CommonStatus{CurrentStepIndex: cur, NextStepIndex: next, CurrentStepState: rolloutsv1beta1.CanaryStepState(state)}
		res := Advance(st, StepWorld{Now: t0, Steps: steps, ReadyStep: cur, NoTraffic: true})
		_ = StepMessage(res.Status, steps)
	})
}

func TestTrafficUnavailableStalls(t *testing.T) {
	s := newSim(t, replicas("1"), replicas("100%"))
	s.reconcile("created")
	s.release("v2")
	w := RolloutWorld{Now: t0, Generation: 1, Spec: s.spec, Workload: s.workload, TrafficUnavailable: true,
		Batch: &BatchObs{ReadyStep: 1}}
	st := PlanRollout(s.status, w).Status
	d := PlanRollout(st, w)
	if got := d.Status.GetSubStatus().CurrentStepState; got != rolloutsv1beta1.CanaryStepStateTrafficRouting {
		t.Fatalf("state = %s, want StepTrafficRouting", got)
	}
	if c := GetCondition(d.Status.Conditions, ConditionStalled); c == nil || c.Reason != ReasonTrafficUnavailable {
		t.Errorf("Stalled = %+v, want reason %s", c, ReasonTrafficUnavailable)
	}
	if d.Status.Message != MsgTrafficUnavailable {
		t.Errorf("message = %q", d.Status.Message)
	}
}

func TestWaitingForTheWorkloadWritesNothing(t *testing.T) {
	s := newSim(t, replicas("1"), replicas("100%"))
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	lagging := *s.workload
	lagging.Consistent = false
	w := RolloutWorld{Now: t0.Add(time.Hour), Generation: 1, Spec: s.spec, Workload: &lagging, NoTraffic: true, Batch: s.batch()}
	d := PlanRollout(s.status, w)
	if diff := cmp.Diff(s.status, d.Status); diff != "" {
		t.Errorf("a lagging workload changed the status (-before +after):\n%s", diff)
	}
	if d.Plan == nil || d.RequeueAfter == 0 {
		t.Errorf("the BatchRelease plan must be kept and the Rollout looked at again: plan=%v requeue=%v", d.Plan, d.RequeueAfter)
	}
}

// A restart for a newer version deletes the BatchRelease; while the workload's status lags behind, the gap
// must not be filled with a BatchRelease of the old step, which the next reconcile would delete again.
func TestWaitingForTheWorkloadCreatesNoBatchRelease(t *testing.T) {
	s := newSim(t, replicas("1"), replicas("50%"), replicas("100%"))
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.release("v3")
	s.reconcile("v3 applied")
	if s.plan != nil {
		t.Fatal("the restart kept the old BatchRelease")
	}
	lagging := *s.workload
	lagging.Consistent = false
	d := PlanRollout(s.status, RolloutWorld{Now: t0, Generation: 1, Spec: s.spec, Workload: &lagging, NoTraffic: true})
	if d.Plan != nil {
		t.Errorf("BatchRelease planned while waiting for the workload: partition %v", d.Plan.BatchPartition)
	}
}

func TestRollingCountsTheNewPods(t *testing.T) {
	s := newSim(t, replicas("50%"), replicas("100%"))
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	w := RolloutWorld{Now: t0, Generation: 1, Spec: s.spec, Workload: s.workload, NoTraffic: true,
		Batch: &BatchObs{Replicas: 5, ReadyReplicas: 3}}
	st := PlanRollout(s.status, w).Status
	if c := st.CanaryStatus; c.CanaryReplicas != 5 || c.CanaryReadyReplicas != 3 {
		t.Errorf("canaryReplicas %d, canaryReadyReplicas %d; want 5 and 3", c.CanaryReplicas, c.CanaryReadyReplicas)
	}
}

func TestRollbackTarget(t *testing.T) {
	p := brPlan(nil, "1", "50%", "100%")
	for _, tc := range []struct {
		batch, replicas int32
		noNeed          *int32
		want            int32
	}{
		{0, 10, nil, 1}, {1, 10, nil, 5}, {2, 10, nil, 10},
		// 6 of 10 pods never left the revision rolled back to: the steps apply to the other 4.
		{0, 10, ptr.To[int32](6), 7}, {1, 10, ptr.To[int32](6), 8}, {2, 10, ptr.To[int32](6), 10},
		{0, 4, ptr.To[int32](0), 1}, {1, 4, ptr.To[int32](4), 4},
		// A count beyond the workload (it was scaled down since) or below zero is clamped.
		{0, 4, ptr.To[int32](9), 4}, {0, 4, ptr.To[int32](-2), 1},
	} {
		if got := RollbackTarget(p, tc.batch, tc.replicas, tc.noNeed); got != tc.want {
			t.Errorf("RollbackTarget(batch %d, %d replicas, noNeed %v) = %d, want %d",
				tc.batch, tc.replicas, ptr.Deref(tc.noNeed, -1), got, tc.want)
		}
	}
}

// A release whose workload goes back to its stable revision moves no pod: the Rollout finalizes it or replaces
// it with a rollback in batches; removing batchPartition (finalizing) still works.
func TestBatchReleaseHoldsARevertedWorkload(t *testing.T) {
	w := BatchWorld{Now: t0, Plan: brPlan(ptr.To[int32](1), "1", "50%", "100%"),
		Workload: &WorkloadView{Replicas: 4, Updated: 2, UpdatedReady: 2, StableRevision: "a", UpdateRevision: "a", Consistent: true}}
	st := rolloutsv1beta1.BatchReleaseStatus{Phase: rolloutsv1beta1.RolloutPhaseProgressing, StableRevision: "a", UpdateRevision: "b",
		ObservedReleasePlanHash: ReleasePlanHash(w.Plan), ObservedWorkloadReplicas: 4,
		CanaryStatus: rolloutsv1beta1.BatchReleaseCanaryStatus{CurrentBatch: 1, CurrentBatchState: rolloutsv1beta1.ReadyBatchState}}
	d := PlanBatchRelease(st, w)
	if d.Action != "" || d.Status.Message != MsgReverted || d.Status.UpdateRevision != "b" {
		t.Errorf("reverted: action %q, message %q, updateRevision %q; want none, %q, b", d.Action, d.Status.Message, d.Status.UpdateRevision, MsgReverted)
	}
	w.Workload.UpdateRevision = "c"
	if d := PlanBatchRelease(st, w); d.Action != ActionUpgrade || d.Status.CanaryStatus.CurrentBatch != 0 {
		t.Errorf("a newer revision: action %q at batch %d; want Upgrade from batch 0", d.Action, d.Status.CanaryStatus.CurrentBatch)
	}
	w.Workload.UpdateRevision, w.Plan.BatchPartition = "a", nil
	if d := PlanBatchRelease(st, w); d.Action != ActionFinalize {
		t.Errorf("reverted, batchPartition removed: action %q; want Finalize", d.Action)
	}
}

// A BatchRelease that rolls back in batches leaves out the pods already on the revision it releases.
func TestBatchReleaseRollbackInBatch(t *testing.T) {
	p := brPlan(ptr.To[int32](0), "1", "50%", "100%")
	w := BatchWorld{Now: t0, Plan: p, RollbackInBatch: true,
		Workload: &WorkloadView{Replicas: 10, Updated: 6, UpdatedReady: 6, StableRevision: "a", UpdateRevision: "a", Consistent: true}}
	w.BatchOnInitialize = true
	if d := PlanBatchRelease(rolloutsv1beta1.BatchReleaseStatus{}, w); d.Action != ActionInitializeBatch || d.DesiredUpdated != 7 || d.Unmoved != 6 {
		t.Errorf("initialize with the batch: %q to %d updated (%d unmoved), want InitializeBatch to 7 (6 left out + 1)",
			d.Action, d.DesiredUpdated, d.Unmoved)
	}
	w.BatchOnInitialize = false
	d := PlanBatchRelease(rolloutsv1beta1.BatchReleaseStatus{}, w)
	if d.Action != ActionInitialize || ptr.Deref(d.Status.CanaryStatus.NoNeedUpdateReplicas, -1) != 6 {
		t.Fatalf("initialize: %q, noNeedUpdateReplicas %v; want Initialize and 6", d.Action, d.Status.CanaryStatus.NoNeedUpdateReplicas)
	}
	d = PlanBatchRelease(d.Status, w)
	if d.Action != ActionUpgrade || d.DesiredUpdated != 7 || d.Unmoved != 6 {
		t.Errorf("batch 1: %q to %d updated (%d unmoved), want Upgrade to 7 (6 left out + 1 of the other 4)",
			d.Action, d.DesiredUpdated, d.Unmoved)
	}
	w.Workload.Updated, w.Workload.UpdatedReady = 7, 7
	if d = PlanBatchRelease(d.Status, w); d.Status.CanaryStatus.CurrentBatchState != rolloutsv1beta1.ReadyBatchState {
		t.Errorf("batch 1 with 7 updated and ready: %s, want Ready", d.Status.CanaryStatus.CurrentBatchState)
	}
	w.RollbackInBatch = false
	if d := PlanBatchRelease(rolloutsv1beta1.BatchReleaseStatus{}, w); d.Status.CanaryStatus.NoNeedUpdateReplicas != nil {
		t.Errorf("without the annotation noNeedUpdateReplicas = %d, want unset", *d.Status.CanaryStatus.NoNeedUpdateReplicas)
	}
}

// simResuming is a two-step release run to its ResumeWorkload finalising step.
func simResuming(t *testing.T) *sim {
	t.Helper()
	s := newSim(t, withPause(replicas("1"), 0), replicas("100%"))
	s.reconcile("created")
	s.release("v2")
	for i := 0; i < 10 && s.status.GetSubStatus().FinalisingStep != rolloutsv1beta1.FinalisingStepResumeWorkload; i++ {
		s.reconcile("rolling")
	}
	if got := s.status.GetSubStatus().FinalisingStep; got != rolloutsv1beta1.FinalisingStepResumeWorkload {
		t.Fatalf("finalising step = %q, want %s", got, rolloutsv1beta1.FinalisingStepResumeWorkload)
	}
	return s
}

// A BatchRelease that reports itself Stalled while it releases the workload stalls the Rollout's finalising
// too, with its message; once the condition is gone, finalising goes on.
func TestBatchFailureStallsFinalising(t *testing.T) {
	s := simResuming(t)
	w := RolloutWorld{Now: s.now, Generation: 1, Spec: s.spec, Workload: s.workload, NoTraffic: true,
		Batch: &BatchObs{Failure: "waited 31s: replica sets not observed"}}
	d := PlanRollout(s.status, w)
	c := GetCondition(d.Status.Conditions, ConditionStalled)
	if c == nil || c.Reason != ReasonBatchReleaseFailed || !strings.Contains(c.Message, "waited 31s") {
		t.Fatalf("Stalled = %+v, want reason %s naming the BatchRelease's message", c, ReasonBatchReleaseFailed)
	}
	if !strings.Contains(d.Status.Message, "waited 31s") {
		t.Errorf("message = %q", d.Status.Message)
	}
	w.Batch = &BatchObs{Completed: true}
	if d := PlanRollout(d.Status, w); GetCondition(d.Status.Conditions, ConditionStalled) != nil {
		t.Errorf("still Stalled once the BatchRelease completed: %+v", d.Status.Conditions)
	}
}

// TestReleaseEndsOnceTheWorkloadSettled: with its BatchRelease gone, a release ends only once the workload's
// controller has observed the resumed workload, so that Healthy carries the generation scripts wait for.
func TestReleaseEndsOnceTheWorkloadSettled(t *testing.T) {
	s := simResuming(t)
	resumed := *s.workload
	resumed.Generation, resumed.Consistent = s.workload.Generation+1, false
	w := RolloutWorld{Now: s.now, Generation: 1, Spec: s.spec, Workload: &resumed, NoTraffic: true}
	d := PlanRollout(s.status, w)
	if got := d.Status.GetSubStatus().FinalisingStep; d.Status.Phase != rolloutsv1beta1.RolloutPhaseProgressing ||
		got != rolloutsv1beta1.FinalisingStepResumeWorkload || d.RequeueAfter == 0 {
		t.Fatalf("workload not observed yet: %s at %q, requeue after %v; want Progressing at %s, looked at again",
			d.Status.Phase, got, d.RequeueAfter, rolloutsv1beta1.FinalisingStepResumeWorkload)
	}
	resumed.Consistent = true
	d = PlanRollout(d.Status, w)
	if d.Status.Phase != rolloutsv1beta1.RolloutPhaseHealthy || d.Status.GetSubStatus().ObservedWorkloadGeneration != resumed.Generation {
		t.Errorf("workload observed: %s with workload generation %d, want Healthy with %d", d.Status.Phase,
			d.Status.GetSubStatus().ObservedWorkloadGeneration, resumed.Generation)
	}
	resumed.Consistent = false
	if d := PlanRollout(s.status, RolloutWorld{Now: s.now, Generation: 1, Spec: s.spec, Workload: &resumed, NoTraffic: true,
		Deleting: true}); !d.RemoveFinalizer {
		t.Errorf("a Rollout being deleted waited for the workload's controller")
	}
}

// A Rollout whose first reconcile finds its workload already marked for a release (the template changed
// before the Rollout had a status) must release that revision through its steps: the revision was never
// released, so the mark is not one left behind.
func TestFirstReconcileOfAMarkedWorkloadStartsTheRelease(t *testing.T) {
	tests := []struct {
		name     string
		workload WorkloadObs
		want     rolloutsv1beta1.RolloutPhase
		release  bool
	}{
		{name: "marked for a new revision",
			workload: WorkloadObs{InProgressing: true, StableRevision: "v1", UpdateRevision: "v2", Replicas: 3, Generation: 3, Consistent: true},
			want:     rolloutsv1beta1.RolloutPhaseProgressing},
		{name: "not marked",
			workload: WorkloadObs{StableRevision: "v1", UpdateRevision: "v1", Replicas: 3, Generation: 1, Consistent: true},
			want:     rolloutsv1beta1.RolloutPhaseHealthy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := rolloutsv1beta1.RolloutSpec{Strategy: rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{
				Steps: []rolloutsv1beta1.CanaryStep{replicas("1"), replicas("100%")}}}}
			wl := tt.workload
			d := PlanRollout(rolloutsv1beta1.RolloutStatus{}, RolloutWorld{Now: t0, Generation: 1, Spec: spec, Workload: &wl, NoTraffic: true})
			if d.Status.Phase != tt.want || d.ReleaseWorkload {
				t.Fatalf("phase %s, releases the workload %v; want %s without releasing it", d.Status.Phase, d.ReleaseWorkload, tt.want)
			}
			sub := d.Status.GetSubStatus()
			if tt.want == rolloutsv1beta1.RolloutPhaseProgressing &&
				(sub.CurrentStepIndex != 1 || sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateCompleted || d.Plan == nil) {
				t.Errorf("step %d %s, plan %v: want step 1 in progress with a BatchRelease", sub.CurrentStepIndex, sub.CurrentStepState, d.Plan)
			}
		})
	}
}
