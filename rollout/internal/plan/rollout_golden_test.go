package plan

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

var update = flag.Bool("update", false, "rewrite golden files")

// sim is a Rollout, its workload and a BatchRelease that makes each batch ready by the next reconcile.
type sim struct {
	t        *testing.T
	spec     rolloutsv1beta1.RolloutSpec
	status   rolloutsv1beta1.RolloutStatus
	workload *WorkloadObs
	plan     *rolloutsv1beta1.ReleasePlan
	deleting bool
	// brDeleted: the BatchRelease was deleted with a finalizing plan; it finalizes and goes by the next reconcile.
	brDeleted bool
	gone      bool
	keep      bool
	// rib: the Rollout rolls back in batches.
	rib bool
	now time.Time
	log []string
	// net is the simulated network of a Rollout with traffic routing (nil: none).
	net *simNet
	// br plays the BatchRelease controller (nil: each batch is ready by the next reconcile).
	br *simBatch
	// analysis is what a RolloutAnalysis reports (nil: none binds the Rollout).
	analysis *AnalysisObs
}

func newSim(t *testing.T, steps ...rolloutsv1beta1.CanaryStep) *sim {
	return &sim{
		t:        t,
		spec:     rolloutsv1beta1.RolloutSpec{Strategy: rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{Steps: steps}}},
		workload: &WorkloadObs{StableRevision: "v1", UpdateRevision: "v1", Replicas: 10, Generation: 1, Consistent: true},
		now:      time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC),
	}
}

func (s *sim) batch() *BatchObs {
	if s.plan == nil {
		return nil
	}
	if s.br != nil {
		return ObserveBatch(s.br.object(*s.plan))
	}
	if s.plan.BatchPartition == nil {
		return &BatchObs{Completed: true}
	}
	obs := &BatchObs{ReadyStep: *s.plan.BatchPartition + 1}
	if s.analysis != nil {
		// Only these stories read the plan a batch carries (an aborted one's).
		obs.Plan = *s.plan
	}
	return obs
}

// reconcile plans once, applies the decision the way the controller does and logs the outcome.
func (s *sim) reconcile(note string) RolloutDecision {
	if s.brDeleted {
		s.plan, s.brDeleted = nil, false
	}
	w := RolloutWorld{Now: s.now, Name: "app", Namespace: "apps", Generation: 1, Spec: s.spec, Deleting: s.deleting, Workload: s.workload, Batch: s.batch(), NoTraffic: s.net == nil, KeepPausedOnDelete: s.keep, RollbackInBatch: s.rib, Analysis: s.analysis}
	if s.net != nil {
		w.Traffic = s.net.run(s.t, s.now, s.status, s.spec)
	}
	if s.gone {
		w.Workload = nil
	}
	d := PlanRollout(s.status, w)
	if s.net != nil {
		// As the controller does.
		d = ChainTraffic(d, w, func(st rolloutsv1beta1.RolloutStatus) *TrafficObs { return s.net.run(s.t, s.now, st, s.spec) })
	}
	s.status = d.Status
	switch {
	case d.DeleteBatch && d.Plan != nil:
		s.plan, s.brDeleted = d.Plan.DeepCopy(), true
	case d.DeleteBatch:
		s.plan = nil
	case d.Plan != nil:
		s.plan = d.Plan.DeepCopy()
	}
	if d.ReleaseWorkload {
		s.workload.InProgressing = false
	}
	s.log = append(s.log, s.line(note, d))
	return d
}

func (s *sim) line(note string, d RolloutDecision) string {
	st := s.status
	sub := st.GetSubStatus()
	step := "-"
	if sub != nil {
		step = fmt.Sprintf("%d/%d %s fin=%s wgen=%d", sub.CurrentStepIndex, sub.NextStepIndex, sub.CurrentStepState,
			sub.FinalisingStep, sub.ObservedWorkloadGeneration)
	}
	br := "none"
	if s.plan != nil && s.plan.BatchPartition != nil {
		br = fmt.Sprintf("partition=%d", *s.plan.BatchPartition)
		if CarriesAbort(*s.plan) {
			br += " no-new-pods"
		}
	} else if s.plan != nil {
		br = "release-all/" + string(s.plan.FinalizingPolicy)
	}
	if s.brDeleted {
		br += " deleted"
	}
	if d.RemoveFinalizer {
		br += " (finalizer removed)"
	}
	if d.Finished != "" {
		br += " finished:" + d.Finished
	}
	line := fmt.Sprintf("%-22s | %-11s | %-51s | %-24s | %s | %s | events=%q", note, st.Phase, step, br, health(st), st.Message, d.Events)
	if s.net != nil {
		line += fmt.Sprintf(" | net: %s requeue=%v", s.net, d.RequeueAfter)
	}
	return line
}

func health(st rolloutsv1beta1.RolloutStatus) string {
	var out []string
	for _, t := range []rolloutsv1beta1.RolloutConditionType{ConditionReady, ConditionReconciling, ConditionStalled} {
		if c := GetCondition(st.Conditions, t); c != nil {
			out = append(out, fmt.Sprintf("%s=%s", t, c.Status))
		}
	}
	return strings.Join(out, ",")
}

func (s *sim) approve() {
	sub := s.status.GetSubStatus()
	if sub.CurrentStepState != rolloutsv1beta1.CanaryStepStatePaused {
		s.t.Fatalf("approve at %s, after:\n%s", sub.CurrentStepState, strings.Join(s.log, "\n"))
	}
	sub.CurrentStepState = rolloutsv1beta1.CanaryStepStateReady
}

func (s *sim) release(rev string) {
	s.workload.UpdateRevision = rev
	s.workload.InProgressing = true
	s.workload.Generation++
}

// scale changes the workload's spec without a new revision (kubectl scale, or the release's own partition).
func (s *sim) scale() {
	s.workload.Generation++
}

func (s *sim) golden(name string) {
	s.t.Helper()
	got := strings.Join(s.log, "\n") + "\n"
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o600); err != nil {
			s.t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatalf("%v (run with -update to create)", err)
	}
	if got != string(want) {
		s.t.Errorf("%s differs from %s:\n%s", name, path, got)
	}
}

func replicas(v string) rolloutsv1beta1.CanaryStep {
	r := intstr.Parse(v)
	return rolloutsv1beta1.CanaryStep{Replicas: &r}
}

func withPause(s rolloutsv1beta1.CanaryStep, seconds int32) rolloutsv1beta1.CanaryStep {
	s.Pause.Duration = ptr.To(seconds)
	return s
}

// The seed document's story: 10 replicas, steps 1 / 50% / 100%, approved twice.
func TestGoldenMultiBatchWithApprovals(t *testing.T) {
	s := newSim(t, replicas("1"), replicas("50%"), replicas("100%"))
	s.reconcile("created")
	s.release("v2")
	s.reconcile("template changed")
	s.reconcile("batch 1 ready")
	s.reconcile("still waiting")
	s.approve()
	s.reconcile("approved step 1")
	s.reconcile("batch 2 ready")
	s.approve()
	s.reconcile("approved step 2")
	s.reconcile("batch 3 ready")
	s.reconcile("workload released")
	s.reconcile("batch release deleted")
	s.reconcile("steady")
	s.workload.InProgressing = true
	s.reconcile("stale mark replayed")
	s.reconcile("mark cleared")
	s.scale()
	s.reconcile("workload scaled")
	if got := s.status.CanaryStatus.ObservedWorkloadGeneration; got != s.workload.Generation {
		t.Errorf("observedWorkloadGeneration %d after a scale, want %d", got, s.workload.Generation)
	}
	s.golden("multi-batch-approvals")
}

func TestGoldenPauseDurations(t *testing.T) {
	s := newSim(t, withPause(replicas("20%"), 0), withPause(replicas("60%"), 30), replicas("100%"))
	s.reconcile("created")
	s.release("v2")
	s.reconcile("template changed")
	s.reconcile("batch 1 ready")
	s.reconcile("batch 2 ready")
	s.now = s.now.Add(10 * time.Second)
	if d := s.reconcile("10s later"); d.RequeueAfter != 20*time.Second {
		t.Errorf("RequeueAfter = %v, want 20s", d.RequeueAfter)
	}
	s.now = s.now.Add(20 * time.Second)
	s.reconcile("30s later")
	s.reconcile("batch 3 ready")
	s.golden("pause-durations")
}

func TestGoldenContinuousReleaseAndRollback(t *testing.T) {
	s := restartedSim(t)
	s.reconcile("old batch release gone")
	if d := s.reconcile("restart in status"); d.Plan == nil {
		t.Error("no BatchRelease once the status names the new revision")
	}
	s.reconcile("batch 1 ready")
	s.release("v1")
	s.reconcile("rolled back to v1")
	s.reconcile("mark removed")
	s.reconcile("workload released")
	s.reconcile("batch release deleted")
	if st := s.status.CanaryStatus; st.CanaryRevision != "v1" || st.ObservedWorkloadGeneration != s.workload.Generation {
		t.Errorf("after the rollback: canaryRevision %q, observedWorkloadGeneration %d; want v1 and %d",
			st.CanaryRevision, st.ObservedWorkloadGeneration, s.workload.Generation)
	}
	s.scale()
	s.reconcile("workload scaled")
	if got := s.status.CanaryStatus.ObservedWorkloadGeneration; got != s.workload.Generation {
		t.Errorf("observedWorkloadGeneration %d after a scale, want %d", got, s.workload.Generation)
	}
	s.golden("continuous-and-rollback")
}

// Rolled back at step 2 with rollouts.kruise.io/rollback-in-batch: the stable revision is released again
// through every step, and the release ends as a success with v1 still stable.
func TestGoldenRollbackInBatch(t *testing.T) {
	s := newSim(t, replicas("1"), replicas("50%"), replicas("100%"))
	s.rib = true
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.reconcile("batch 1 ready")
	s.approve()
	s.reconcile("approved step 1")
	s.reconcile("batch 2 ready")
	s.release("v1")
	s.reconcile("rolled back to v1")
	if d := s.reconcile("old batch release gone"); d.Plan != nil {
		t.Error("BatchRelease created before the status names the restarted release")
	}
	if sub := s.status.GetSubStatus(); sub.StableRevision != "v1" || sub.PodTemplateHash != "v1" {
		t.Errorf("restarted release: stable %q, update %q; want v1 and v1", sub.StableRevision, sub.PodTemplateHash)
	}
	s.reconcile("restart in status")
	s.reconcile("batch 1 ready")
	s.approve()
	s.reconcile("approved step 1")
	s.reconcile("batch 2 ready")
	s.approve()
	s.reconcile("approved step 2")
	s.reconcile("batch 3 ready")
	s.reconcile("workload released")
	s.reconcile("batch release deleted")
	s.reconcile("control released")
	if sub := s.status.GetSubStatus(); s.status.Phase != rolloutsv1beta1.RolloutPhaseHealthy || sub.StableRevision != "v1" {
		t.Errorf("after the rollback: phase %s, stable %q; want Healthy and v1", s.status.Phase, sub.StableRevision)
	}
	s.golden("rollback-in-batch")
}

func TestGoldenStepJumpAndPause(t *testing.T) {
	s := newSim(t, replicas("1"), replicas("50%"), replicas("100%"))
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.reconcile("batch 1 ready")
	s.status.CanaryStatus.NextStepIndex = 3
	s.reconcile("jump to step 3")
	s.spec.Strategy.Paused = true
	s.reconcile("paused")
	s.spec.Strategy.Paused = false
	s.reconcile("resumed")
	s.reconcile("workload released")
	s.golden("jump-and-pause")
}

func TestGoldenDisableAndDelete(t *testing.T) {
	s := newSim(t, replicas("1"), replicas("100%"))
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.spec.Disabled = true
	s.reconcile("disabled")
	s.reconcile("mark removed")
	s.reconcile("released")
	s.spec.Disabled = false
	s.reconcile("enabled mid-finalising")
	s.reconcile("enabled")
	s.release("v3")
	s.reconcile("v3 applied")
	s.deleting = true
	s.reconcile("deleted")
	s.reconcile("mark removed")
	s.reconcile("released")
	s.reconcile("batch release deleted")
	s.gone = true
	s.deleting = false
	s.reconcile("workload gone")
	s.golden("disable-and-delete")
}

// Under KeepWorkloadPausedOnRolloutDeletion the BatchRelease is deleted while it still names a batch, so the
// workload is handed over frozen.
func TestGoldenDeleteKeepsPaused(t *testing.T) {
	s := newSim(t, replicas("1"), replicas("100%"))
	s.keep = true
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.reconcile("batch 1 ready")
	s.deleting = true
	s.reconcile("deleted")
	s.reconcile("mark removed")
	s.reconcile("batch release deleted")
	s.golden("delete-keeps-paused")
}

// Deleted in the gap of a continuous release, after the old BatchRelease is gone and before the next one
// exists: the workload is still marked and frozen, so a BatchRelease is created to release it before the
// finalizer goes.
func TestGoldenDeleteDuringRestart(t *testing.T) {
	s := restartedSim(t)
	s.deleting = true
	if d := s.reconcile("deleted"); d.Plan == nil || d.Plan.BatchPartition != nil || d.RemoveFinalizer {
		t.Fatalf("deleted with the workload frozen and no BatchRelease: plan %+v, finalizer removed %v", d.Plan, d.RemoveFinalizer)
	}
	s.reconcile("workload released")
	s.reconcile("batch release deleted")
	s.golden("delete-during-restart")
}

// restartedSim is a three-step release of v2, its first batch ready, when v3 arrives: the continuous
// release has just deleted the old BatchRelease.
func restartedSim(t *testing.T) *sim {
	t.Helper()
	s := newSim(t, replicas("1"), replicas("50%"), replicas("100%"))
	s.reconcile("created")
	s.release("v2")
	s.reconcile("v2 applied")
	s.reconcile("batch 1 ready")
	s.release("v3")
	s.reconcile("v3 applied")
	return s
}
