package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// run sets the phase of a step's run (0: the background's).
func (s *sim) run(step int32, phase analysisv1alpha1.AnalysisPhase) {
	s.analysis.Runs[step] = RunObs{Name: fmt.Sprintf("app-v2-0-%d", step), Phase: phase}
}

func newAnalysisSim(t *testing.T, abort bool, gated ...int32) *sim {
	s := newTrafficSim(t, traffic("20%", "1"), traffic("50%", "50%"), replicas("100%"))
	s.spec.Strategy.Canary.TrafficRoutings[0].GracePeriodSeconds = 0
	s.analysis = &AnalysisObs{Name: "app", Gated: gated, Runs: map[int32]RunObs{}, Abort: abort}
	return s
}

// A canary gated at steps 1 and 2 passes step 1, fails step 2 and is aborted: traffic back to stable, then no
// new pod; a retry starts it again from step 1, and it completes.
func TestGoldenAnalysisAbortAndRetry(t *testing.T) {
	s := newAnalysisSim(t, true, 1, 2)
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.reconcile("canary service")
	s.reconcile("stable pinned")
	s.reconcile("services settled")
	s.reconcile("batch 1 ready")
	s.reconcile("weight 20 set")
	s.reconcile("waits for its run")
	s.run(1, analysisv1alpha1.AnalysisPhaseRunning)
	s.reconcile("run 1 running")
	s.run(1, analysisv1alpha1.AnalysisPhaseSuccessful)
	s.reconcile("run 1 passed")
	s.approve()
	s.reconcile("approved")
	s.reconcile("step 2 prepared")
	s.reconcile("batch 2 ready")
	s.reconcile("weight 50 set")
	s.run(2, analysisv1alpha1.AnalysisPhaseFailed)
	d := s.reconcile("run 2 failed")
	if c := GetCondition(d.Status.Conditions, ConditionStalled); c == nil || c.Reason != analysisv1alpha1.ReasonAnalysisFailed {
		t.Errorf("Stalled = %+v, want reason %s", c, analysisv1alpha1.ReasonAnalysisFailed)
	}
	if CarriesAbort(*s.plan) {
		t.Errorf("pods taken away before the traffic is back on stable")
	}
	s.reconcile("traffic to stable")
	s.reconcile("canary pods gone")
	if !CarriesAbort(*s.plan) || s.net.routes != "" {
		t.Errorf("aborted release: plan %+v, routes %q; want no new pods and no routes", s.plan, s.net.routes)
	}
	s.reconcile("stays aborted")
	s.analysis.Runs = map[int32]RunObs{}
	s.reconcile("retried")
	s.reconcile("step 1 prepared")
	s.reconcile("batch 1 ready again")
	s.reconcile("weight 20 again")
	s.run(1, analysisv1alpha1.AnalysisPhaseSuccessful)
	s.reconcile("run 1 passed again")
	s.approve()
	s.reconcile("approved again")
	s.reconcile("step 2 prepared again")
	s.reconcile("batch 2 ready again")
	s.reconcile("weight 50 again")
	s.run(2, analysisv1alpha1.AnalysisPhaseSuccessful)
	s.reconcile("run 2 passed")
	s.approve()
	s.reconcile("step 3")
	s.reconcile("batch 3 ready")
	s.finish()
	s.golden("analysis-abort-retry")
}

// Under onFailure Pause a failed run holds its step for a person, even a step that would not pause; an
// approval goes on. An inconclusive background run holds every later step the same way.
func TestGoldenAnalysisPause(t *testing.T) {
	s := newSim(t, withPause(replicas("1"), 0), withPause(replicas("50%"), 0), replicas("100%"))
	s.analysis = &AnalysisObs{Name: "app", Gated: []int32{1}, Runs: map[int32]RunObs{}, Background: true}
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.run(0, analysisv1alpha1.AnalysisPhaseRunning)
	s.reconcile("batch 1 ready")
	s.run(1, analysisv1alpha1.AnalysisPhaseFailed)
	d := s.reconcile("run 1 failed")
	if c := GetCondition(d.Status.Conditions, ConditionStalled); c == nil || c.Reason != analysisv1alpha1.ReasonAnalysisFailed {
		t.Errorf("Stalled = %+v, want reason %s", c, analysisv1alpha1.ReasonAnalysisFailed)
	}
	s.reconcile("still held")
	s.approve()
	s.reconcile("approved anyway")
	s.run(0, analysisv1alpha1.AnalysisPhaseInconclusive)
	d = s.reconcile("background inconclusive")
	if c := GetCondition(d.Status.Conditions, ConditionReconciling); c == nil || c.Reason != ReasonAnalysisInconclusive {
		t.Errorf("Reconciling = %+v, want reason %s", c, ReasonAnalysisInconclusive)
	}
	if sub := s.status.GetSubStatus(); sub.CurrentStepIndex != 2 || sub.CurrentStepState != rolloutsv1beta1.CanaryStepStatePaused {
		t.Errorf("step %d %s, want step 2 held at its pause", sub.CurrentStepIndex, sub.CurrentStepState)
	}
	s.approve()
	s.reconcile("approved step 2")
	s.reconcile("batch 3 ready")
	s.approve()
	s.reconcile("approved step 3")
	s.reconcile("finalising")
	s.reconcile("finalised")
	s.golden("analysis-pause")
}

// A step whose pods are not ready within the progress deadline stalls, naming them, and goes on by itself
// once they are ready.
func TestProgressDeadline(t *testing.T) {
	s := newSim(t, replicas("1"), replicas("100%"))
	s.analysis = &AnalysisObs{Name: "app", Runs: map[int32]RunObs{}, ProgressDeadline: time.Minute,
		StuckPods: []string{"app-x (container app: CrashLoopBackOff)"}}
	s.reconcile("created")
	s.br = &simBatch{}
	s.release("v2")
	s.reconcile("v2 applied")
	s.brReconcile("initialized")
	s.brReconcile("batch 1 started")
	d := s.reconcile("pods not ready")
	if GetCondition(d.Status.Conditions, ConditionStalled) != nil || d.RequeueAfter != time.Minute+time.Second {
		t.Errorf("before the deadline: conditions %+v, requeue %v; want no stall, a look at the deadline", d.Status.Conditions, d.RequeueAfter)
	}
	s.now = s.now.Add(61 * time.Second)
	d = s.reconcile("deadline passed")
	want := "the pods of step(1) did not become ready within progressDeadlineSeconds (1m0s): app-x (container app: CrashLoopBackOff)"
	if c := GetCondition(d.Status.Conditions, ConditionStalled); c == nil || c.Reason != analysisv1alpha1.ReasonProgressDeadlineExceeded || c.Message != want {
		t.Errorf("Stalled = %+v, want reason %s, message %q", c, analysisv1alpha1.ReasonProgressDeadlineExceeded, want)
	}
	s.podsReady()
	s.brReconcile("pods ready")
	d = s.reconcile("step 1 done")
	if GetCondition(d.Status.Conditions, ConditionStalled) != nil {
		t.Errorf("still stalled once the pods are ready: %+v", d.Status.Conditions)
	}
}

// A progress deadline the binding recorded under abortOnProgressDeadline aborts the release like a failed run,
// with its own reason; cleared by a retry, the release starts again.
func TestProgressDeadlineAbort(t *testing.T) {
	s := newSim(t, replicas("1"), replicas("100%"))
	s.analysis = &AnalysisObs{Name: "app", Runs: map[int32]RunObs{}}
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.analysis.DeadlineAbort = "the pods of step(1) did not become ready within progressDeadlineSeconds (1m0s)"
	d := s.reconcile("deadline recorded")
	if c := GetCondition(d.Status.Conditions, ConditionStalled); c == nil || c.Reason != analysisv1alpha1.ReasonProgressDeadlineExceeded {
		t.Errorf("Stalled = %+v, want reason %s", c, analysisv1alpha1.ReasonProgressDeadlineExceeded)
	}
	if !CarriesAbort(*s.plan) || !Aborted(s.status) {
		t.Errorf("not aborted: plan %+v", s.plan)
	}
	s.analysis.DeadlineAbort = ""
	d = s.reconcile("retried")
	if GetCondition(d.Status.Conditions, ConditionStalled) != nil || Aborted(s.status) || CarriesAbort(*s.plan) {
		t.Errorf("still aborted after a retry: %+v, plan %+v", d.Status.Conditions, s.plan)
	}
}

// A blue-green release gated at step 2 (half the traffic on the new pods) fails its run and is aborted like a
// canary: the traffic goes back to stable first, then the BatchRelease asks the workload for no new pod, and
// the blue-green control takes them away (rollout/control); a retry starts again from step 1.
func TestGoldenBlueGreenAnalysisAbort(t *testing.T) {
	s := newTrafficSim(t)
	s.spec.Strategy = rolloutsv1beta1.RolloutStrategy{BlueGreen: &rolloutsv1beta1.BlueGreenStrategy{
		Steps:           []rolloutsv1beta1.CanaryStep{traffic("0%", "50%"), traffic("50%", "100%"), traffic("100%", "100%")},
		TrafficRoutings: s.spec.Strategy.Canary.TrafficRoutings,
	}}
	s.spec.Strategy.BlueGreen.TrafficRoutings[0].GracePeriodSeconds = 0
	s.analysis = &AnalysisObs{Name: "app", Gated: []int32{2}, Runs: map[int32]RunObs{}, Abort: true}
	s.br = &simBatch{}
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	for i := range 4 {
		s.reconcile(fmt.Sprintf("step 1 network %d", i+1))
	}
	s.brReconcile("initialized")
	s.brReconcile("batch 1 surged")
	s.podsReady()
	s.brReconcile("batch 1 ready")
	s.reconcileUntil("step 1 paused", rolloutsv1beta1.CanaryStepStatePaused)
	s.approve()
	s.reconcileUntil("step 2 prepared", rolloutsv1beta1.CanaryStepStateUpgrade)
	s.reconcile("step 2 batch planned")
	s.brReconcile("batch 2 started")
	s.brReconcile("batch 2 surged")
	s.podsReady()
	s.brReconcile("batch 2 ready")
	s.reconcileUntil("step 2 waits for its run", rolloutsv1beta1.CanaryStepStateMetricsAnalysis)
	s.run(2, analysisv1alpha1.AnalysisPhaseFailed)
	s.reconcile("run 2 failed")
	if CarriesAbort(*s.plan) {
		t.Errorf("pods taken away before the traffic is back on stable")
	}
	for i := 0; i < 4 && !CarriesAbort(*s.plan); i++ {
		s.reconcile(fmt.Sprintf("traffic to stable (%d)", i+1))
	}
	if !CarriesAbort(*s.plan) || s.net.routes != "" {
		t.Fatalf("aborted release: plan %+v, routes %q; want no new pods and no routes", s.plan, s.net.routes)
	}
	s.brReconcile("abort batch")
	if s.br.updated != 0 {
		t.Errorf("the BatchRelease asks for %d new pods, want 0", s.br.updated)
	}
	s.podsReady()
	s.brReconcile("new pods gone")
	s.reconcile("stays aborted")
	s.analysis.Runs = map[int32]RunObs{}
	s.reconcile("retried")
	s.golden("bluegreen-analysis-abort")
}

// reconcileUntil reconciles until the current step reaches state, at most 6 times.
func (s *sim) reconcileUntil(note string, state rolloutsv1beta1.CanaryStepState) {
	s.t.Helper()
	for i := range 6 {
		s.reconcile(fmt.Sprintf("%s (%d)", note, i+1))
		if s.status.GetSubStatus().CurrentStepState == state {
			return
		}
	}
	s.t.Fatalf("%s: no %s after 6 reconciles:\n%s", note, state, strings.Join(s.log, "\n"))
}

// A step whose run measures until the step's pause ends: the step goes on to its pause while the run
// measures, waits at StepReady when the minute is up until the binding's termination makes the run
// Successful, then goes on. A step without a pause waits for an approval instead, which ends it the same way.
func TestGoldenAnalysisUntilStepEnd(t *testing.T) {
	s := newSim(t, withPause(replicas("1"), 60), withPause(replicas("50%"), 0), replicas("100%"))
	s.analysis = &AnalysisObs{Name: "app", Gated: []int32{1, 2}, Runs: map[int32]RunObs{}, Abort: true}
	measuring := func(step int32) {
		s.analysis.Runs[step] = RunObs{Name: fmt.Sprintf("app-v2-0-%d", step), Phase: analysisv1alpha1.AnalysisPhaseRunning, UntilTerminated: true}
	}
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.reconcile("waits for its run")
	measuring(1)
	s.reconcile("run 1 measuring")
	if sub := s.status.GetSubStatus(); sub.CurrentStepState != rolloutsv1beta1.CanaryStepStatePaused {
		t.Fatalf("step 1 at %s while its run measures, want StepPaused", sub.CurrentStepState)
	}
	s.now = s.now.Add(61 * time.Second)
	s.reconcile("pause over")
	if sub := s.status.GetSubStatus(); sub.CurrentStepIndex != 1 || sub.CurrentStepState != rolloutsv1beta1.CanaryStepStateReady {
		t.Fatalf("step %d at %s, want step 1 waiting at StepReady for its run to end", sub.CurrentStepIndex, sub.CurrentStepState)
	}
	s.reconcile("still measuring")
	s.run(1, analysisv1alpha1.AnalysisPhaseSuccessful)
	s.reconcile("run 1 terminated")
	measuring(2)
	s.reconcile("step 2 measuring")
	s.reconcile("no pause: waits")
	if sub := s.status.GetSubStatus(); sub.CurrentStepIndex != 2 || sub.CurrentStepState != rolloutsv1beta1.CanaryStepStatePaused {
		t.Fatalf("step %d at %s, want step 2 waiting at its pause for an approval", sub.CurrentStepIndex, sub.CurrentStepState)
	}
	s.approve()
	s.reconcile("approved")
	s.run(2, analysisv1alpha1.AnalysisPhaseSuccessful)
	s.reconcile("run 2 terminated")
	s.reconcile("batch 3 ready")
	s.reconcile("finalised")
	s.golden("analysis-until-step-end")
}
