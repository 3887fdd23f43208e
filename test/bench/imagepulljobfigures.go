package bench

import (
	"fmt"
	"time"
)

// ipjRun is one ImagePullJob's measured run.
type ipjRun struct {
	Name        string
	Parallelism int
	Nodes       int
	// Pull is each simulated agent's pull.
	Pull time.Duration
	// Completed is from the job's creation to the event of its status with completionTime; Released to the
	// event of the last NodeImage free of its tag, in spec and status.
	Completed, Released time.Duration
	// AllTagged is to the event of the last NodeImage whose spec names the tag (the manager's writes);
	// AllSucceeded to the last status showing it Succeeded (the agents').
	AllTagged, AllSucceeded    time.Duration
	Desired, Succeeded, Failed int32
	// Phase is the manager's part, from the creation until Released; AgentWrites the simulated agents'.
	Phase       Phase
	AgentWrites []RequestCount
	Counters    []float64
}

// rounds is how many pulls one after the other the parallelism puts on the busiest slot.
func (r ipjRun) rounds() int {
	if r.Parallelism <= 0 {
		return 0
	}
	return (r.Nodes + r.Parallelism - 1) / r.Parallelism
}

// floor is what no controller could beat: the rounds of pulls back to back.
func (r ipjRun) floor() time.Duration { return time.Duration(r.rounds()) * r.Pull }

// overheadPerRound is the time beyond the pulls themselves, per round: the manager's write of the next
// NodeImage, the agent seeing it and writing Pulling, then Succeeded, the manager seeing that.
func (r ipjRun) overheadPerRound() time.Duration {
	if n := r.rounds(); n > 0 {
		return (r.Completed - r.floor()) / time.Duration(n)
	}
	return 0
}

// checkImagePullJobRun fails a run whose job did not pull on every node: then its time measures something else.
func checkImagePullJobRun(r ipjRun) error {
	n := int32(r.Nodes)
	if r.Desired != n || r.Succeeded != n || r.Failed != 0 {
		return fmt.Errorf("ImagePullJob %s: desired %d, succeeded %d, failed %d; want %d, %d, 0", r.Name, r.Desired, r.Succeeded, r.Failed, n, n)
	}
	return nil
}

func imagePullJobMetrics(r ipjRun) []Metric {
	label := fmt.Sprintf(" (parallelism %d)", r.Parallelism)
	out := []Metric{
		{Name: fmt.Sprintf("ImagePullJob over %d nodes%s: created -> completed", r.Nodes, label), Unit: UnitSeconds, Value: r.Completed.Seconds(),
			Note: fmt.Sprintf("job created -> the status event with completionTime, succeeded %d; %d round(s) of simulated %v pulls: floor %v",
				r.Succeeded, r.rounds(), r.Pull, r.floor())},
		{Name: "all NodeImages tagged" + label, Unit: UnitSeconds, Value: r.AllTagged.Seconds(),
			Note: "job created -> the last NodeImage event whose spec names the tag: the manager's writes"},
		{Name: "all pulls Succeeded" + label, Unit: UnitSeconds, Value: r.AllSucceeded.Seconds(),
			Note: "job created -> the last NodeImage event whose status shows the tag Succeeded: the simulated agents' writes"},
		{Name: "status lag" + label, Unit: UnitSeconds, Value: (r.Completed - r.AllSucceeded).Seconds(),
			Note: "the last Succeeded seen -> the job's completionTime seen"},
		{Name: "time per round beyond the pull" + label, Unit: UnitSeconds, Value: r.overheadPerRound().Seconds(),
			Note: "(created -> completed - floor) / rounds: the manager's NodeImage write, the agent's two status writes, the job's status"},
		{Name: "created -> tags taken back" + label, Unit: UnitSeconds, Value: r.Released.Seconds(),
			Note: "the last NodeImage free of the job's tag, spec (the manager's) and status (the agents')"},
		{Name: "manager writes per node" + label, Unit: UnitPerNode, Value: perNode(writes(r.Phase.Requests), r.Nodes),
			Note: "creation -> tags taken back: " + perPodWrites(r.Phase.Requests, r.Nodes)},
		{Name: "simulated agents' writes per node" + label, Unit: UnitPerNode, Value: perNode(writes(r.AgentWrites), r.Nodes),
			Note: "not the manager's: " + perPodWrites(r.AgentWrites, r.Nodes)},
	}
	return append(out, counterMetrics(imagePullJobCounters, r.Counters, label, "")...)
}

func perNode(n int64, nodes int) float64 {
	if nodes <= 0 {
		return 0
	}
	return float64(n) / float64(nodes)
}

// pullComparison is the timed pulls of each way.
type pullComparison struct {
	Agent, Ctr Summary
}

func comparePulls(times map[string][]time.Duration) (pullComparison, error) {
	c := pullComparison{Agent: Summarize(times[wayAgent]), Ctr: Summarize(times[wayCtr])}
	if c.Agent.N == 0 || c.Ctr.N == 0 {
		return c, fmt.Errorf("%d agent and %d ctr pulls timed: need both", c.Agent.N, c.Ctr.N)
	}
	return c, nil
}

// pullMetrics: the agent's median pull against ctr's, with the target on the ratio.
func pullMetrics(c pullComparison) []Metric {
	return []Metric{
		Metric{Name: fmt.Sprintf("agent pull of a %d MiB image (median of %d)", pullImageBytes>>20, c.Agent.N), Unit: UnitSeconds,
			Value: c.Agent.P50Ms / 1000,
			Note: fmt.Sprintf("CRI ImageStatus, PullImage, ImageStatus on the real node's containerd, as the agent's attempt; "+
				"the image removed and its blobs and snapshot checked gone before each pull; agent %.0f-%.0f ms, ctr %.0f-%.0f ms",
				c.Agent.MinMs, c.Agent.MaxMs, c.Ctr.MinMs, c.Ctr.MaxMs)}.
			Compared("ctr image pull", c.Ctr.P50Ms/1000).WithRatioTarget(pullRatioTarget),
	}
}

// pullSkipped says why the real runtime's pulls were not measured.
func pullSkipped(reason error) Metric {
	return Metric{Name: "real runtime's pulls measured", Unit: UnitCount, Value: 0, Note: "skipped: " + reason.Error()}
}
