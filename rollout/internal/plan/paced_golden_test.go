package plan

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// simBatch plays the BatchRelease controller with its own planner, over a workload whose pods of the new
// revision are as many as the last partition asked for, and ready when the test says so.
type simBatch struct {
	status         rolloutsv1beta1.BatchReleaseStatus
	updated, ready int32
}

// object is the BatchRelease as the Rollout controller reads it, its status observing the spec it had.
func (b *simBatch) object(p rolloutsv1beta1.ReleasePlan) *rolloutsv1beta1.BatchRelease {
	return &rolloutsv1beta1.BatchRelease{
		ObjectMeta: metav1.ObjectMeta{Generation: 1},
		Spec:       rolloutsv1beta1.BatchReleaseSpec{ReleasePlan: p},
		Status:     *b.status.DeepCopy(),
	}
}

// brReconcile runs one BatchRelease reconcile and logs the batch it is at and the partition it wrote.
func (s *sim) brReconcile(note string) BatchDecision {
	b := s.br
	d := PlanBatchRelease(b.status, BatchWorld{Now: s.now, Generation: 1, Plan: *s.plan, Workload: &WorkloadView{
		Replicas: s.workload.Replicas, Updated: b.updated, UpdatedReady: b.ready,
		StableRevision: s.workload.StableRevision, UpdateRevision: s.workload.UpdateRevision, Consistent: true,
	}})
	d.Status.ObservedGeneration = 1
	b.status = d.Status
	written := "-"
	if d.Action == ActionUpgrade && d.DesiredUpdated != b.updated {
		b.updated = d.DesiredUpdated
		written = fmt.Sprint(b.updated)
	}
	cs := b.status.CanaryStatus
	s.log = append(s.log, fmt.Sprintf("%-22s | BatchRelease batch %d %-9s | partition=%d | pods %d/%d | new pods written: %s | events=%q",
		note, cs.CurrentBatch, cs.CurrentBatchState, *s.plan.BatchPartition, b.ready, b.updated, written, d.Event))
	return d
}

// podsReady makes every pod the BatchRelease asked for ready.
func (s *sim) podsReady() { s.br.ready = s.br.updated }

// A release with pause 0 between its steps and no traffic: the BatchRelease is allowed one batch ahead and
// starts each next batch in the reconcile that finds the current one ready, while the Rollout's steps follow.
// Then the Rollout is paused: the batch in flight goes on, the one after it does not start.
func TestGoldenPacedBatches(t *testing.T) {
	s := newSim(t, withPause(replicas("10%"), 0), withPause(replicas("30%"), 0), withPause(replicas("60%"), 0), replicas("100%"))
	s.workload.Replicas = 10
	s.reconcile("created")
	s.release("v2")
	s.br = &simBatch{}
	s.reconcile("template changed")
	s.brReconcile("initialized")
	if d := s.reconcile("BR at batch 1"); d.Plan == nil || *d.Plan.BatchPartition != 1 {
		t.Fatalf("the BatchRelease is not allowed past batch 1: plan %+v", d.Plan)
	}
	s.brReconcile("paced")
	s.podsReady()
	if d := s.brReconcile("batch 1 pods ready"); d.Action != ActionUpgrade || d.DesiredUpdated != 3 || !d.BatchReady {
		t.Fatalf("batch 2 not started with batch 1 ready: %+v", d)
	}
	s.reconcile("BR at batch 2")
	s.brReconcile("paced")
	s.spec.Strategy.Paused = true
	s.reconcile("paused")
	s.brReconcile("told to stop")
	s.podsReady()
	if d := s.brReconcile("batch 2 pods ready"); d.Action != ActionNone {
		t.Fatalf("a batch started while the Rollout is paused: %+v", d)
	}
	s.reconcile("paused, batch 2 ready")
	s.spec.Strategy.Paused = false
	s.reconcile("resumed")
	s.brReconcile("batch 3")
	s.reconcile("BR at batch 3")
	s.brReconcile("paced")
	s.podsReady()
	s.brReconcile("batch 3 pods ready")
	s.spec.Strategy.Paused = true
	s.reconcile("paused in batch 4")
	if got := *s.plan.BatchPartition; got != 3 {
		t.Errorf("a pause took back the batch in flight: partition %d, want 3", got)
	}
	s.spec.Strategy.Paused = false
	s.reconcile("resumed")
	s.podsReady()
	s.brReconcile("batch 4 pods ready")
	s.reconcile("last batch ready")
	s.golden("paced-batches")
}

func TestPaceBatches(t *testing.T) {
	steps := func(pause *int32) []rolloutsv1beta1.CanaryStep {
		first := replicas("10%")
		first.Pause.Duration = pause
		return []rolloutsv1beta1.CanaryStep{first, replicas("50%"), replicas("100%")}
	}
	zero, thirty := ptr.To[int32](0), ptr.To[int32](30)
	// The Rollout at step 1 plans partition 0; the BatchRelease carries the same plan with partition carried
	// (filled in below), at batch b.
	at := func(carried int32, b int32, observed bool) *BatchObs {
		return &BatchObs{Plan: rolloutsv1beta1.ReleasePlan{BatchPartition: ptr.To(carried)}, Batch: b, Observed: observed}
	}
	for name, tc := range map[string]struct {
		pause    *int32
		paused   bool
		traffic  bool
		analysis *AnalysisObs
		batch    *BatchObs
		want     int32
	}{
		"an analysis of the step waits":             {pause: zero, analysis: &AnalysisObs{Gated: []int32{1}}, batch: at(0, 0, true), want: 0},
		"a background analysis waits":               {pause: zero, analysis: &AnalysisObs{Background: true}, batch: at(0, 0, true), want: 0},
		"an analysis of another step leads":         {pause: zero, analysis: &AnalysisObs{Gated: []int32{2}}, batch: at(0, 0, true), want: 1},
		"pause 0 leads":                             {pause: zero, batch: at(0, 0, true), want: 1},
		"a lead not yet observed is kept":           {pause: zero, batch: at(1, 0, false), want: 1},
		"no lead before the BR is at the step":      {pause: zero, batch: at(0, 0, false), want: 0},
		"a pause duration waits":                    {pause: thirty, batch: at(0, 0, true), want: 0},
		"approval waits":                            {batch: at(0, 0, true), want: 0},
		"a paused Rollout takes the lead back":      {pause: zero, paused: true, batch: at(1, 0, true), want: 0},
		"a started batch is kept when paused":       {pause: zero, paused: true, batch: at(1, 1, true), want: 1},
		"a started batch is kept on a longer pause": {pause: thirty, batch: at(1, 1, true), want: 1},
		"traffic routing never leads":               {pause: zero, traffic: true, batch: at(0, 0, true), want: 0},
		"a changed plan waits to be observed":       {pause: zero, batch: &BatchObs{Plan: brPlan(ptr.To[int32](0), "20%", "50%", "100%"), Observed: true}, want: 0},
	} {
		spec := rolloutsv1beta1.RolloutSpec{Strategy: rolloutsv1beta1.RolloutStrategy{
			Paused: tc.paused, Canary: &rolloutsv1beta1.CanaryStrategy{Steps: steps(tc.pause)}}}
		w := RolloutWorld{Spec: spec, Batch: tc.batch, NoTraffic: !tc.traffic, Analysis: tc.analysis}
		sub := rolloutsv1beta1.CommonStatus{CurrentStepIndex: 1}
		d := &RolloutDecision{Plan: releasePlan(w, sub, false)}
		if tc.batch.Plan.Batches == nil {
			carried := tc.batch.Plan.BatchPartition
			tc.batch.Plan = *d.Plan.DeepCopy()
			tc.batch.Plan.BatchPartition = carried
		}
		paceBatches(d, w, mayLead(w, sub))
		if got := *d.Plan.BatchPartition; got != tc.want {
			t.Errorf("%s: partition %d, want %d", name, got, tc.want)
		}
	}
}
