package bench

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// trafficStep is one step of the canary Rollout: the pods on the new
// template once it is done and the canary-weight it routes.
type trafficStep struct {
	Replicas int32
	Weight   int32
}

// trafficTimeline is what a canary run recorded; like releaseTimeline,
// every time is a watch event's arrival on the harness's clock.
type trafficTimeline struct {
	// Start is when the change was sent, Completed when the Rollout was
	// seen Healthy and Completed.
	Start, Completed time.Time
	// PodsReady counts the pods of the new template seen Ready; SetReady
	// is the new ReplicaSet's readyReplicas as it rose.
	PodsReady []mark
	SetReady  []mark
	// BatchReady are the 1-based batches the BatchRelease reported Ready;
	// Routing the steps the Rollout was seen in StepTrafficRouting.
	BatchReady []mark
	Routing    []mark
	// Weights are the canary Ingress's canary-weight values as they
	// changed, in order.
	Weights []mark
}

// trafficStepFigures describe one step: when its batch's last pod was
// seen Ready, when its weight was seen on the canary Ingress.
type trafficStepFigures struct {
	Step           trafficStep
	Ready, Written time.Time
	// Latency is Written - Ready.
	Latency time.Duration
	// Path is what happened between Ready and Written, link by link.
	Path []hop
}

// analyseTraffic pairs each step's last pod Ready with the first
// canary-weight of the step's value; the weights of the steps differ, so
// the pairing is by value, not by position.
func analyseTraffic(t trafficTimeline, steps []trafficStep) ([]trafficStepFigures, error) {
	out := make([]trafficStepFigures, 0, len(steps))
	for i, s := range steps {
		ready, ok := firstMark(t.PodsReady, int64(s.Replicas))
		if !ok {
			return nil, fmt.Errorf("step %d: %d new pods seen Ready, the batch needs %d", i+1, len(t.PodsReady), s.Replicas)
		}
		written, ok := firstEqual(t.Weights, int64(s.Weight))
		if !ok {
			return nil, fmt.Errorf("step %d: canary-weight %d never seen (seen: %s)", i+1, s.Weight, weightList(t.Weights))
		}
		out = append(out, trafficStepFigures{Step: s, Ready: ready.At, Written: written.At,
			Latency: written.At.Sub(ready.At), Path: routingPath(t, s, int64(i+1), written)})
	}
	return out, nil
}

// firstEqual is the first mark of exactly value v.
func firstEqual(list []mark, v int64) (mark, bool) {
	for _, m := range list {
		if m.Value == v {
			return m, true
		}
	}
	return mark{}, false
}

// routingPath: kube-controller-manager counts the pod in the ReplicaSet's
// status, the BatchRelease reports the batch Ready, the Rollout enters
// StepTrafficRouting, the canary Ingress carries the weight.
func routingPath(t trafficTimeline, s trafficStep, step int64, written mark) []hop {
	return []hop{
		markHop("ReplicaSet status", t.SetReady, int64(s.Replicas)),
		markHop("batch Ready", t.BatchReady, step),
		markHop("StepTrafficRouting", t.Routing, step),
		{Name: fmt.Sprintf("canary-weight %d", s.Weight), At: written.At, Seen: true},
	}
}

// weightList renders the weights seen, in order.
func weightList(weights []mark) string {
	if len(weights) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(weights))
	for _, w := range weights {
		parts = append(parts, strconv.FormatInt(w.Value, 10))
	}
	return strings.Join(parts, ", ")
}

// latencies are the steps' Ready -> weight latencies, in step order.
func latencies(steps []trafficStepFigures) []time.Duration {
	out := make([]time.Duration, 0, len(steps))
	for _, s := range steps {
		out = append(out, s.Latency)
	}
	return out
}
