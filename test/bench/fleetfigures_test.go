package bench

import (
	"testing"
	"time"
)

// The queue figures are the means between the first reading and the last: the wait in the queue, and the time
// a reconcile holds a worker.
func TestQueueSamplerMeans(t *testing.T) {
	reading := func(waitSum, waits, reconcileSum, reconciles float64) []Sample {
		q, c := map[string]string{"name": "rollout-controller"}, map[string]string{"controller": "rollout-controller"}
		return []Sample{
			{Name: "workqueue_depth", Labels: q, Value: 3},
			{Name: "workqueue_queue_duration_seconds_sum", Labels: q, Value: waitSum},
			{Name: "workqueue_queue_duration_seconds_count", Labels: q, Value: waits},
			{Name: "controller_runtime_reconcile_time_seconds_sum", Labels: c, Value: reconcileSum},
			{Name: "controller_runtime_reconcile_time_seconds_count", Labels: c, Value: reconciles},
		}
	}
	done := make(chan struct{})
	close(done)
	q := &queueSampler{cancel: func() {}, done: done, figures: queueFigures{
		maxDepth: map[string]float64{}, meanWait: map[string]time.Duration{}, meanTaken: map[string]time.Duration{}}}
	q.read(reading(10, 100, 1, 50), false, nil)
	q.read(reading(30, 110, 3, 70), false, nil)
	f := q.stop()
	if got := f.meanWait["rollout-controller"]; got != 2*time.Second {
		t.Errorf("mean wait %v, want 2s (20 s over 10 waits)", got)
	}
	if got := f.meanTaken["rollout-controller"]; got != 100*time.Millisecond {
		t.Errorf("mean reconcile %v, want 100ms (2 s over 20 reconciles)", got)
	}
	if got := f.meanWait["batchrelease-controller"]; got != 0 {
		t.Errorf("a queue never observed has mean wait %v, want 0", got)
	}
}

// The cluster's CPU is the sum over the measured processes, each named in the note.
func TestClusterCPU(t *testing.T) {
	m := clusterCPU("cluster CPU", map[string]Usage{"kube-apiserver": {Cores: 1.25}, "etcd": {Cores: 0.5}})
	if m.Value != 1.75 || m.Unit != UnitCores {
		t.Errorf("cluster CPU %v %s, want 1.75 cores", m.Value, m.Unit)
	}
	if m.Note != "cores: etcd 0.50, kube-apiserver 1.25" {
		t.Errorf("note %q", m.Note)
	}
}
