package plan

import (
	"testing"
	"time"
)

// Settled tells apart the status writes that leave the Rollout nothing to plan: a release moving on through
// its batches, but not a decision the next reconcile takes further, nor one whose reads depend on the status.
func TestSettled(t *testing.T) {
	moving := newSim(t, replicas("50%"), replicas("100%"))
	moving.reconcile("created")
	moving.release("v2")
	if d, w := moving.decide(); !Settled(d, w) {
		t.Errorf("a release starting its first batch (%s) should be settled", d.Describe())
	}

	restarted := restartedSim(t)
	if d, w := restarted.decide(); Settled(d, w) {
		t.Errorf("the old BatchRelease gone, the next reconcile restarts the release (%s): not settled", d.Describe())
	}

	analysed := newSim(t, replicas("50%"), replicas("100%"))
	analysed.analysis = &AnalysisObs{}
	analysed.reconcile("created")
	analysed.release("v2")
	if d, w := analysed.decide(); Settled(d, w) {
		t.Errorf("an analysis is read for the status's step (%s): not settled", d.Describe())
	}

	routed := newTrafficSim(t, replicas("50%"), replicas("100%"))
	routed.reconcile("created")
	routed.release("v2")
	d, w := routed.decide()
	if Settled(d, w) {
		t.Errorf("a traffic task that changed the network runs again (%s, %+v): not settled", d.Describe(), w.Traffic)
	}
	for range 4 {
		// One network change per reconcile, each after its grace period.
		routed.reconcile("network")
		routed.now = routed.now.Add(5 * time.Second)
	}
	d, w = routed.decide()
	if w.Traffic == nil || !w.Traffic.Done || !Settled(d, w) {
		t.Errorf("the step's network in place (%+v), its batch upgrading (%s): settled", w.Traffic, d.Describe())
	}
	changed := *w.Traffic
	changed.Done = false
	w.Traffic = &changed
	if Settled(d, w) {
		t.Errorf("the same task having changed the network: not settled")
	}
}
