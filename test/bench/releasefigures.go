package bench

import (
	"fmt"
	"strings"
	"time"
)

// releaseTimeline is what a Rollout run recorded. Every time is the
// arrival of a watch event (or the sending of the change) on the
// harness's clock, so differences between them need no clock agreement.
type releaseTimeline struct {
	// Start is when the change was sent.
	Start         time.Time
	StartRequests map[RequestKey]float64
	// Batches are the partitions written to the Deployment, as they rose.
	Batches []batchMark
	// PodsReady counts the pods of the new template seen Ready,
	// PodsLabelled those seen with the release's rollout-id label; SetReady
	// is the new ReplicaSet's readyReplicas as it rose.
	PodsReady    []mark
	PodsLabelled []mark
	SetReady     []mark
	// AllReadyRequests is the manager's request counter read when the last
	// new pod was seen Ready.
	AllReadyRequests map[RequestKey]float64
	// BatchReady are the 1-based batches the BatchRelease reported done,
	// BatchCompleted its Completed phase, RolloutSteps the steps the
	// Rollout entered.
	BatchReady     []mark
	BatchCompleted []mark
	RolloutSteps   []mark
	// Completed is when the Rollout was seen Healthy and Completed.
	Completed   time.Time
	EndRequests map[RequestKey]float64
}

// batchMark is a partition written to the Deployment: the pods it puts on
// the new template, when its event arrived, and the manager's request
// counter read right after.
type batchMark struct {
	Updated  int32
	At       time.Time
	Requests map[RequestKey]float64
}

// releaseFigures are the figures the issue asks for.
type releaseFigures struct {
	// Total runs from sending the change to the Rollout Completed.
	Total time.Duration
	// FirstBatch runs from sending the change to the first batch written.
	FirstBatch time.Duration
	Steps      []stepFigures
	// Finalising runs from the last pod Ready to the Rollout Completed.
	Finalising time.Duration
	// StartWrites are the manager's writes from the change to the first
	// partition, FinalisingWrites those from the last pod Ready to the
	// Rollout Completed: once per release, not per step.
	StartWrites, FinalisingWrites []RequestCount
}

// stepFigures describe one step.
type stepFigures struct {
	// Target is the pods on the new template the step asks for; Pods
	// those it adds.
	Target, Pods int32
	// Written is when the step's partition arrived, Ready when the last
	// pod of its batch was seen Ready.
	Written, Ready time.Time
	// Rolled is Ready - Written.
	Rolled time.Duration
	// Transition runs from Ready to the next step's partition; zero for
	// the last step, which is followed by finalising instead.
	Transition time.Duration
	// Path is what happened between Ready and the next partition (the
	// Rollout Completed for the last step), link by link.
	Path []hop
	// Writes are the manager's writes from this step's partition to the
	// next one's; for the last step, to its last pod Ready.
	Writes []RequestCount
}

// analyseRelease derives the figures from a timeline, given the updated
// pods each step asks for.
func analyseRelease(t releaseTimeline, targets []int32) (releaseFigures, error) {
	if len(targets) == 0 {
		return releaseFigures{}, fmt.Errorf("no steps")
	}
	fig := releaseFigures{Total: t.Completed.Sub(t.Start)}
	for i := range targets {
		s, err := stepOf(t, targets, i)
		if err != nil {
			return releaseFigures{}, err
		}
		fig.Steps = append(fig.Steps, s)
	}
	fig.FirstBatch = fig.Steps[0].Written.Sub(t.Start)
	fig.Finalising = t.Completed.Sub(fig.Steps[len(fig.Steps)-1].Ready)
	first, _ := batchFor(t.Batches, targets[0])
	if t.StartRequests == nil || first.Requests == nil || t.AllReadyRequests == nil || t.EndRequests == nil {
		return releaseFigures{}, fmt.Errorf("the manager's requests were not read at the change, the first partition, the last pod Ready and the end")
	}
	fig.StartWrites = onlyWrites(DiffRequests(t.StartRequests, first.Requests))
	fig.FinalisingWrites = onlyWrites(DiffRequests(t.AllReadyRequests, t.EndRequests))
	return fig, nil
}

func stepOf(t releaseTimeline, targets []int32, i int) (stepFigures, error) {
	s := stepFigures{Target: targets[i], Pods: targets[i]}
	if i > 0 {
		s.Pods -= targets[i-1]
	}
	written, ok := batchFor(t.Batches, s.Target)
	if !ok {
		return s, fmt.Errorf("step %d: no partition of %d pods was seen written", i+1, s.Target)
	}
	ready, ok := firstMark(t.PodsReady, int64(s.Target))
	if !ok {
		return s, fmt.Errorf("step %d: %d new pods seen Ready, the batch needs %d", i+1, len(t.PodsReady), s.Target)
	}
	s.Written, s.Ready, s.Rolled = written.At, ready.At, ready.At.Sub(written.At)
	return s, stepWrites(&s, t, targets, i, written)
}

// stepWrites fills the step's transition and writes, which both end where
// the next step's partition arrives.
func stepWrites(s *stepFigures, t releaseTimeline, targets []int32, i int, written batchMark) error {
	from, to := written.Requests, t.AllReadyRequests
	if i+1 < len(targets) {
		next, ok := batchFor(t.Batches, targets[i+1])
		if !ok {
			return fmt.Errorf("step %d: no partition of %d pods was seen written", i+2, targets[i+1])
		}
		s.Transition, to = next.At.Sub(s.Ready), next.Requests
		s.Path = transitionPath(t, s.Target, i+1, next)
	} else {
		s.Path = finalisingPath(t, s.Target, i+1)
	}
	if from == nil || to == nil {
		return fmt.Errorf("step %d: the manager's requests were not read", i+1)
	}
	s.Writes = onlyWrites(DiffRequests(from, to))
	return nil
}

// batchFor is the first partition that puts at least target pods on the
// new template.
func batchFor(batches []batchMark, target int32) (batchMark, bool) {
	for _, b := range batches {
		if b.Updated >= target {
			return b, true
		}
	}
	return batchMark{}, false
}

// hop is one link of the chain that follows a batch's last pod Ready.
type hop struct {
	Name string
	At   time.Time
	Seen bool
}

// transitionPath: kube-controller-manager counts the pod in the
// ReplicaSet's status, the manager has labelled the batch's pods (these
// two in either order), the BatchRelease reports the batch done (Ready, or
// the next batch begun: then after the partition), the Rollout enters the
// next step, the BatchRelease writes its partition.
func transitionPath(t releaseTimeline, target int32, step int, next batchMark) []hop {
	return []hop{
		markHop("ReplicaSet status", t.SetReady, int64(target)),
		markHop("pods labelled", t.PodsLabelled, int64(target)),
		markHop("batch done", t.BatchReady, int64(step)),
		markHop(fmt.Sprintf("Rollout step %d", step+1), t.RolloutSteps, int64(step+1)),
		{Name: "partition", At: next.At, Seen: true},
	}
}

// finalisingPath: as transitionPath up to the batch, then the
// BatchRelease Completed and the Rollout Completed.
func finalisingPath(t releaseTimeline, target int32, step int) []hop {
	return []hop{
		markHop("ReplicaSet status", t.SetReady, int64(target)),
		markHop("pods labelled", t.PodsLabelled, int64(target)),
		markHop("batch done", t.BatchReady, int64(step)),
		markHop("BatchRelease Completed", t.BatchCompleted, 1),
		{Name: "Rollout Completed", At: t.Completed, Seen: true},
	}
}

func markHop(name string, list []mark, v int64) hop {
	m, ok := firstMark(list, v)
	return hop{Name: name, At: m.At, Seen: ok}
}

// describePath renders each link as its time since start.
func describePath(start time.Time, path []hop) string {
	parts := make([]string, 0, len(path))
	for _, h := range path {
		if !h.Seen {
			parts = append(parts, h.Name+" not seen")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s", h.Name, formatGap(h.At.Sub(start))))
	}
	return strings.Join(parts, ", ")
}

// formatGap is a signed gap: a link can precede the start (pods are
// labelled while they start), and watch streams of different resources
// can deliver causally ordered events a few milliseconds out of order.
func formatGap(d time.Duration) string {
	if d < time.Second && d > -time.Second {
		return fmt.Sprintf("%+.0f ms", ms(d))
	}
	return fmt.Sprintf("%+.2f s", d.Seconds())
}

func onlyWrites(requests []RequestCount) []RequestCount {
	var out []RequestCount
	for _, r := range requests {
		if writes([]RequestCount{r}) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// addReleaseMetrics adds the figures, each with its target.
func addReleaseMetrics(res *Result, fig releaseFigures, floors []floorRun, release Phase, sc releaseScale) {
	res.Add(
		Metric{Name: "release total", Unit: UnitSeconds, Value: fig.Total.Seconds(),
			Note: "change applied -> Rollout Healthy and Completed; floor: the plain Deployment's mean of " + floorTimes(floors)}.
			Compared("plain Deployment", meanFloor(floors).Seconds()).WithRatioTarget(sc.ratio),
		Metric{Name: "first batch written", Unit: UnitSeconds, Value: fig.FirstBatch.Seconds(),
			Note: "change applied -> partition of step 1"},
	)
	for i, s := range fig.Steps {
		res.Add(Metric{Name: fmt.Sprintf("step %d: batch Ready", i+1), Unit: UnitSeconds, Value: s.Rolled.Seconds(),
			Note: fmt.Sprintf("%d pods: partition %d written -> its last pod Ready", s.Pods, s.Target)})
	}
	addTransitionMetrics(res, fig.Steps, sc.transition)
	last := fig.Steps[len(fig.Steps)-1]
	tail := meanTail(floors)
	res.Add(Metric{Name: "finalising", Unit: UnitSeconds, Value: fig.Finalising.Seconds(),
		Note: "last pod seen Ready -> Rollout seen Healthy and Completed: " + describePath(last.Ready, last.Path)}.
		Compared("plain Deployment's tail", tail.Seconds()))
	res.Add(Metric{Name: "finalising beyond the native tail", Unit: UnitSeconds, Value: (fig.Finalising - tail).Seconds(),
		Note: "finalising minus the plain Deployment's tail (last new pod seen Ready -> Deployment seen rolled out), " +
			"mean of " + floorTails(floors)}.WithTarget(finalisingTarget.Seconds()))
	res.Add(Metric{Name: "start: manager writes", Unit: UnitCount, Value: float64(writes(fig.StartWrites)),
		Note: "change applied -> partition of step 1: " + requestList(fig.StartWrites)})
	addStepWrites(res, fig, sc)
	addReleaseUsage(res, release, floors, sc.rss)
}

// addStepWrites adds the manager's writes in each part of the release, and per replica over all of it, each
// with the scale's target if it sets one.
func addStepWrites(res *Result, fig releaseFigures, sc releaseScale) {
	total := writes(fig.StartWrites) + writes(fig.FinalisingWrites)
	for i, s := range fig.Steps {
		m := Metric{Name: fmt.Sprintf("step %d: manager writes", i+1), Unit: UnitCount, Value: float64(writes(s.Writes)),
			Note: requestList(s.Writes)}
		if sc.stepWrites > 0 {
			m = m.WithTarget(float64(sc.stepWrites) + float64(s.Pods))
		}
		res.Add(m)
		total += writes(s.Writes)
	}
	res.Add(Metric{Name: "finalising: manager writes", Unit: UnitCount, Value: float64(writes(fig.FinalisingWrites)),
		Note: "last pod Ready -> Rollout Completed: " + requestList(fig.FinalisingWrites)})
	perPod := Metric{Name: "manager writes per pod", Unit: UnitPerPod, Value: float64(total) / float64(sc.replicas),
		Note: fmt.Sprintf("%d writes from the change to Completed, over %d replicas", total, sc.replicas)}
	if sc.writesPerPod > 0 {
		perPod = perPod.WithTarget(sc.writesPerPod)
	}
	res.Add(perPod)
}

// meanTail is the mean tail of the floor runs.
func meanTail(floors []floorRun) time.Duration {
	var sum time.Duration
	for _, f := range floors {
		sum += f.tail
	}
	return sum / time.Duration(max(len(floors), 1))
}

func floorTails(floors []floorRun) string {
	var out []string
	for _, f := range floors {
		out = append(out, f.tail.Round(time.Millisecond).String())
	}
	return strings.Join(out, " and ")
}

// meanFloor is the mean time of the floor runs.
func meanFloor(floors []floorRun) time.Duration {
	var sum time.Duration
	for _, f := range floors {
		sum += f.took
	}
	return sum / time.Duration(max(len(floors), 1))
}

// floorTimes lists the floor runs' times in order ("12.9 s before the release, 13.4 s after").
func floorTimes(floors []floorRun) string {
	when := []string{"before the release", "after"}
	parts := make([]string, len(floors))
	for i, f := range floors {
		parts[i] = fmt.Sprintf("%.1f s", f.took.Seconds())
		if i < len(when) {
			parts[i] += " " + when[i]
		}
	}
	return strings.Join(parts, ", ")
}

// addTransitionMetrics adds each step's transition and their median.
func addTransitionMetrics(res *Result, steps []stepFigures, target time.Duration) {
	var samples []time.Duration
	for i, s := range steps[:len(steps)-1] {
		samples = append(samples, s.Transition)
		res.Add(Metric{Name: fmt.Sprintf("step %d -> %d transition", i+1, i+2), Unit: UnitMilliseconds,
			Value: ms(s.Transition), Note: "after the last pod Ready: " + describePath(s.Ready, s.Path)})
	}
	summary := Summarize(samples)
	if res.Latencies == nil {
		res.Latencies = map[string]Summary{}
	}
	res.Latencies["step transition"] = summary
	res.Add(Metric{Name: "step transition p50", Unit: UnitMilliseconds, Value: summary.P50Ms,
		Note: fmt.Sprintf("median of %d: last pod Ready -> next partition written", summary.N)}.WithTarget(ms(target)))
}

func addReleaseUsage(res *Result, release Phase, floors []floorRun, rssTarget float64) {
	var floorWrites int64
	for _, f := range floors {
		floorWrites += writes(f.phase.Requests)
	}
	m, k := release.Usage[ManagerName], release.Usage[ControllerManagerName]
	res.Add(
		Metric{Name: "manager peak RSS (release)", Unit: UnitBytes, Value: float64(m.PeakRSSBytes)}.
			Compared(ControllerManagerName, float64(k.PeakRSSBytes)).WithTarget(rssTarget),
		Metric{Name: "manager CPU (release)", Unit: UnitCores, Value: m.Cores}.Compared(ControllerManagerName, k.Cores),
		Metric{Name: "manager API writes during the floor", Unit: UnitCount, Value: float64(floorWrites),
			Note: "both floor runs; the plain Deployment is not the manager's to touch"},
	)
}

// logRelease prints the run's figures as progress lines.
func logRelease(env *Env, fig releaseFigures, floors []floorRun) {
	env.Logf("release: %v (floor %v: %s); first batch written after %v", fig.Total.Round(time.Millisecond),
		meanFloor(floors).Round(time.Millisecond), floorTimes(floors), fig.FirstBatch.Round(time.Millisecond))
	for i, s := range fig.Steps {
		env.Logf("  step %d (%d pods): Ready %v after its partition, %d manager writes; after its last pod Ready: %s",
			i+1, s.Pods, s.Rolled.Round(time.Millisecond), writes(s.Writes), describePath(s.Ready, s.Path))
	}
}
