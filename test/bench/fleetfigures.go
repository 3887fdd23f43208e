package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// fleetCounters tell where a fleet release's requests went.
var fleetCounters = []counterSpec{
	requestsRejected,
	writeConflicts,
	{"Rollout reconciles", reconcileTotal, map[string]string{"controller": "rollout-controller"}},
	{"BatchRelease reconciles", reconcileTotal, map[string]string{"controller": "batchrelease-controller"}},
	{"Deployment reconciles", reconcileTotal, map[string]string{"controller": "advanced-deployment"}},
	{"reconciles failed", reconcileTotal, map[string]string{"result": "error"}},
}

// fleetQueues are the work queues whose depth and wait a fleet release reports.
var fleetQueues = []string{"rollout-controller", "batchrelease-controller", "advanced-deployment"}

// queueFigures are the work queues' deepest moment, mean wait and mean reconcile time over a run.
type queueFigures struct {
	maxDepth  map[string]float64
	meanWait  map[string]time.Duration
	meanTaken map[string]time.Duration
}

// queueHistograms are the histograms whose mean over a run a queue reports: its wait, and its reconciles' time
// (how long a worker is held).
var queueHistograms = []struct{ metric, label string }{
	{"workqueue_queue_duration_seconds", "name"},
	{"controller_runtime_reconcile_time_seconds", "controller"},
}

type queueSampler struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	figures queueFigures
	first   map[string][2]float64 // queueHistograms' sums and counts at the first reading, by histogram and queue
	last    map[string][2]float64
}

// sampleQueues reads the manager's work queue metrics every second until stop, logging the depths every
// fifth reading, so that a run's log shows the queues over time.
func sampleQueues(ctx context.Context, env *Env) *queueSampler {
	ctx, cancel := context.WithCancel(ctx)
	q := &queueSampler{cancel: cancel, done: make(chan struct{}), figures: queueFigures{
		maxDepth: map[string]float64{}, meanWait: map[string]time.Duration{}, meanTaken: map[string]time.Duration{}}}
	go q.run(ctx, env)
	return q
}

func (q *queueSampler) run(ctx context.Context, env *Env) {
	defer close(q.done)
	ticker := time.NewTicker(fleetQueueSampleInterval)
	defer ticker.Stop()
	for n := 0; ; n++ {
		if samples, err := env.ManagerSamples(ctx); err == nil {
			q.read(samples, n%5 == 0, env)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (q *queueSampler) read(samples []Sample, log bool, env *Env) {
	q.mu.Lock()
	defer q.mu.Unlock()
	sums := map[string][2]float64{}
	line := ""
	for _, name := range fleetQueues {
		depth := sumCounter(samples, counterSpec{Metric: "workqueue_depth", Labels: map[string]string{"name": name}})
		q.figures.maxDepth[name] = max(q.figures.maxDepth[name], depth)
		for _, h := range queueHistograms {
			labels := map[string]string{h.label: name}
			sums[h.metric+"/"+name] = [2]float64{
				sumCounter(samples, counterSpec{Metric: h.metric + "_sum", Labels: labels}),
				sumCounter(samples, counterSpec{Metric: h.metric + "_count", Labels: labels}),
			}
		}
		line += fmt.Sprintf(" %s %.0f", name, depth)
	}
	if q.first == nil {
		q.first = sums
	}
	q.last = sums
	if log {
		env.Logf("work queue depth:%s", line)
	}
}

// stop ends the sampling and returns the figures.
func (q *queueSampler) stop() queueFigures {
	q.cancel()
	<-q.done
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, name := range fleetQueues {
		q.figures.meanWait[name] = q.mean(queueHistograms[0].metric + "/" + name)
		q.figures.meanTaken[name] = q.mean(queueHistograms[1].metric + "/" + name)
	}
	return q.figures
}

// mean is a histogram's mean between the first reading and the last (0 without observations).
func (q *queueSampler) mean(key string) time.Duration {
	sum, count := q.last[key][0]-q.first[key][0], q.last[key][1]-q.first[key][1]
	if count <= 0 {
		return 0
	}
	return time.Duration(sum / count * float64(time.Second))
}

func addFleetReleaseMetrics(res *Result, native, release fleetRun) {
	if len(native.done) < fleetSize || len(release.done) < fleetSize {
		addIncompleteFleetMetrics(res, native, release)
		return
	}
	last, nativeLast := release.done[len(release.done)-1], native.done[len(native.done)-1]
	median, nativeMedian := release.done[len(release.done)/2], native.done[len(native.done)/2]
	manager := release.phase.Usage[ManagerName]
	res.Add(
		Metric{Name: "last Rollout Healthy", Unit: UnitSeconds, Value: last.Seconds(),
			Note: "change sent to every Deployment -> the last Rollout Healthy with its release completed"}.
			Compared("last Deployment rolled out without Rollouts", nativeLast.Seconds()).WithRatioTarget(fleetReleaseRatioTarget),
		Metric{Name: "median Rollout Healthy", Unit: UnitSeconds, Value: median.Seconds()}.
			Compared("median Deployment without Rollouts", nativeMedian.Seconds()),
		Metric{Name: "slowest Rollout against the median", Unit: UnitSeconds, Value: last.Seconds(),
			Note: "no Rollout starved: the slowest within 2x the median"}.
			Compared("median Rollout", median.Seconds()).WithRatioTarget(fleetStarvationTarget),
		Metric{Name: "manager writes per Rollout", Unit: UnitPerRollout, Value: float64(writes(release.phase.Requests)) / float64(fleetSize),
			Note: perPodWrites(release.phase.Requests, fleetSize)}.WithTarget(fleetWritesTarget),
		Metric{Name: "manager peak RSS (fleet release)", Unit: UnitBytes, Value: float64(manager.PeakRSSBytes)}.WithTarget(fleetReleaseRSSTarget),
		Metric{Name: "manager CPU (fleet release)", Unit: UnitCores, Value: manager.Cores},
	)
	addFleetCPU(res, native, release)
	addFleetCounters(res, release)
}

// addFleetStages reports the median of each stage of a release, over the Rollouts that went through it.
func addFleetStages(res *Result, release fleetRun) {
	for _, s := range stageSpans {
		f, ok := release.stages[s]
		if !ok {
			continue
		}
		from := s.from
		if from == "" {
			from = "change"
		}
		res.Add(Metric{Name: fmt.Sprintf("median %s -> %s", from, s.to), Unit: UnitSeconds, Value: f.median.Seconds(),
			Note: fmt.Sprintf("over the %d Rollouts seen at both", f.n)})
	}
}

// addFleetCPU reports the CPU of every measured process in each change: on a machine they saturate, the
// release's time is bounded by its share of the cores.
func addFleetCPU(res *Result, native, release fleetRun) {
	res.Add(clusterCPU("cluster CPU (change without Rollouts)", native.phase.Usage),
		clusterCPU("cluster CPU (fleet release)", release.phase.Usage))
}

func clusterCPU(name string, usage map[string]Usage) Metric {
	names := slices.Sorted(maps.Keys(usage))
	sum, parts := 0.0, make([]string, 0, len(names))
	for _, n := range names {
		sum += usage[n].Cores
		parts = append(parts, fmt.Sprintf("%s %.2f", n, usage[n].Cores))
	}
	return Metric{Name: name, Unit: UnitCores, Value: sum, Note: "cores: " + strings.Join(parts, ", ")}
}

// addIncompleteFleetMetrics reports a run that did not finish within fleetReleaseTimeout: how many were done,
// and the rest as missed.
func addIncompleteFleetMetrics(res *Result, native, release fleetRun) {
	bound := fmt.Sprintf("within %v of the change", fleetReleaseTimeout)
	res.Add(
		Metric{Name: "Deployments rolled out without Rollouts", Unit: UnitCount, Value: float64(len(native.done)), Note: bound},
		Metric{Name: "Rollouts not Healthy", Unit: UnitCount, Value: float64(fleetSize - len(release.done)),
			Note: fmt.Sprintf("%s; %d of %d were", bound, len(release.done), fleetSize)}.WithTarget(0),
		Metric{Name: "manager peak RSS (fleet release)", Unit: UnitBytes, Value: float64(release.phase.Usage[ManagerName].PeakRSSBytes)}.
			WithTarget(fleetReleaseRSSTarget),
		Metric{Name: "manager CPU (fleet release)", Unit: UnitCores, Value: release.phase.Usage[ManagerName].Cores},
	)
	if len(native.done) == fleetSize {
		res.Add(Metric{Name: "last Deployment rolled out without Rollouts", Unit: UnitSeconds, Value: native.done[fleetSize-1].Seconds()})
	}
	addFleetCPU(res, native, release)
	addFleetCounters(res, release)
}

func addFleetCounters(res *Result, release fleetRun) {
	addFleetStages(res, release)
	if len(release.counters) != len(fleetCounters) {
		return
	}
	for i, spec := range fleetCounters {
		res.Add(Metric{Name: spec.Name, Unit: UnitCount, Value: release.counters[i]})
	}
	if total := countSum(release.events); total > 0 {
		res.Add(Metric{Name: "events per Rollout (all components)", Unit: UnitPerRollout, Value: float64(total) / float64(fleetSize), Note: eventsNote(release.events, 5)})
	}
	for _, name := range fleetQueues {
		res.Add(Metric{Name: "work queue " + name + ": deepest", Unit: UnitCount, Value: release.queues.maxDepth[name]},
			Metric{Name: "work queue " + name + ": mean wait", Unit: UnitSeconds, Value: release.queues.meanWait[name].Seconds()},
			Metric{Name: "work queue " + name + ": mean reconcile", Unit: UnitSeconds, Value: release.queues.meanTaken[name].Seconds(),
				Note: "how long a reconcile holds a worker"})
	}
}
