package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

const (
	statefulSetScaleNamespace = "bench-statefulset-scale"
	// statefulSetScaleRatioTarget bounds the Advanced StatefulSet's time over the native one's (issue 20).
	statefulSetScaleRatioTarget = 1.2
)

// statefulSetScaleOrder runs the kinds symmetrically, each on a fresh set deleted before the next: whatever
// the cluster warms up or slows down along the way falls on the compared kinds alike, to first order. The gated
// StatefulSet in the middle is a second baseline: what the pods' readiness gates cost with no controller's.
var statefulSetScaleOrder = []string{kindStatefulSet, kindAdvancedStatefulSet, kindGatedStatefulSet, kindAdvancedStatefulSet, kindStatefulSet}

// statefulSetScale scales a Parallel Advanced StatefulSet from 0 to 500 replicas, against a native
// StatefulSet with the Parallel policy doing the same in the same cluster.
func statefulSetScale() Scenario {
	return Scenario{
		Name: "statefulset-scale",
		Description: fmt.Sprintf("a Parallel Advanced StatefulSet scaled 0 -> %d until its status shows every pod Ready and available, "+
			"against a Parallel apps/v1 StatefulSet doing the same (a StatefulSet warm-up, then runs %s)",
			statefulSetReplicas, strings.Join(statefulSetScaleOrder, ", ")),
		Cluster: cluster.Options{ControllerManager: true, Scheduler: true, Nodes: statefulSetNodes, PodsPerNode: 110,
			Args: nativeArgs()},
		Timeout: 15 * time.Minute,
		Run:     runStatefulSetScale,
	}
}

func runStatefulSetScale(ctx context.Context, env *Env, res *Result) error {
	res.Cluster.Objects = map[string]int{"advanced statefulsets": 2, "statefulsets": 4, "pods": (len(statefulSetScaleOrder) + 1) * statefulSetReplicas}
	dyn, kcm, err := startCloneSetScenario(ctx, env, statefulSetScaleNamespace)
	if err != nil {
		return err
	}
	runs, err := runStatefulSetScales(ctx, env, dyn, kcm)
	if err != nil {
		return err
	}
	c, err := compareStatefulSetScale(runs)
	if err != nil {
		return err
	}
	res.Record(c.advancedPhase)
	addStatefulSetScaleMetrics(res, c)
	return nil
}

// runStatefulSetScales runs a native warm-up, not counted (the cluster's first pods cost more than any
// later ones), then statefulSetScaleOrder.
func runStatefulSetScales(ctx context.Context, env *Env, dyn dynamic.Interface, kcm Proc) ([]scaleRun, error) {
	if _, err := scaleOnce(ctx, env, nativeStatefulSetTarget(env.Kube, statefulSetScaleNamespace, "warm-up"), kcm); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	runs := make([]scaleRun, 0, len(statefulSetScaleOrder))
	for i, kind := range statefulSetScaleOrder {
		name := fmt.Sprintf("%s-%d", strings.ToLower(kind), i+1)
		t := statefulSetScaleTarget(env, dyn, kind, name)
		run, err := scaleOnce(ctx, env, t, kcm)
		if err != nil {
			return nil, fmt.Errorf("run %d (%s): %w", i+1, kind, err)
		}
		runs = append(runs, run)
	}
	return runs, nil
}

func statefulSetScaleTarget(env *Env, dyn dynamic.Interface, kind, name string) scaleTarget {
	switch kind {
	case kindAdvancedStatefulSet:
		return advancedStatefulSetTarget(dyn, statefulSetScaleNamespace, name)
	case kindGatedStatefulSet:
		return gatedStatefulSetTarget(env, statefulSetScaleNamespace, name)
	default:
		return nativeStatefulSetTarget(env.Kube, statefulSetScaleNamespace, name)
	}
}

// statefulSetScaleComparison is the Advanced StatefulSet's runs against the native ones: mean figures and
// summed phases of each kind.
type statefulSetScaleComparison struct {
	advanced, native, gated    runFigures
	gatedRuns                  int
	advancedPhase, nativePhase Phase
	advancedRuns, nativeRuns   int
	counters                   []float64
	order                      string
}

func compareStatefulSetScale(runs []scaleRun) (statefulSetScaleComparison, error) {
	byKind := map[string][]scaleRun{}
	var order []string
	for _, r := range runs {
		byKind[r.Kind] = append(byKind[r.Kind], r)
		order = append(order, fmt.Sprintf("%s %s", r.Kind, FormatValue(UnitSeconds, r.Figures.Total.Seconds())))
	}
	a, n := byKind[kindAdvancedStatefulSet], byKind[kindStatefulSet]
	if len(a) == 0 || len(n) == 0 {
		return statefulSetScaleComparison{}, fmt.Errorf("%d Advanced StatefulSet and %d StatefulSet runs: need both", len(a), len(n))
	}
	g := byKind[kindGatedStatefulSet]
	var gated runFigures
	if len(g) > 0 {
		gated = meanFigures(figuresOf(g))
	}
	return statefulSetScaleComparison{
		advanced: meanFigures(figuresOf(a)), native: meanFigures(figuresOf(n)), gated: gated, gatedRuns: len(g),
		advancedPhase: sumPhases(phasesOf(a)), nativePhase: sumPhases(phasesOf(n)),
		advancedRuns: len(a), nativeRuns: len(n), counters: countersOf(a), order: strings.Join(order, ", "),
	}, nil
}

// addStatefulSetScaleMetrics adds the figures: times against the native StatefulSet's, the
// manager's writes per pod, its RSS and CPU against kube-controller-manager's in the native runs.
func addStatefulSetScaleMetrics(res *Result, c statefulSetScaleComparison) {
	a, n := c.advanced, c.native
	res.Add(
		Metric{Name: fmt.Sprintf("Advanced StatefulSet 0 -> %d Ready", statefulSetReplicas), Unit: UnitSeconds, Value: a.Total.Seconds(),
			Note: "scale sent -> status Ready and available at the current generation; mean of each kind's runs: " + c.order}.
			Compared("StatefulSet", n.Total.Seconds()).WithRatioTarget(statefulSetScaleRatioTarget),
		Metric{Name: "all pods created", Unit: UnitSeconds, Value: a.AllStarted.Seconds(), Note: "scale sent -> last pod's creation seen"}.
			Compared("StatefulSet", n.AllStarted.Seconds()),
		Metric{Name: "all pods Ready", Unit: UnitSeconds, Value: a.AllFinished.Seconds(), Note: "scale sent -> last pod seen Ready"}.
			Compared("StatefulSet", n.AllFinished.Seconds()),
		Metric{Name: "status lag", Unit: UnitSeconds, Value: a.StatusLag.Seconds(), Note: "last pod seen Ready -> the status showing it"}.
			Compared("StatefulSet", n.StatusLag.Seconds()),
	)
	if c.gatedRuns > 0 {
		res.Add(
			Metric{Name: fmt.Sprintf("gated StatefulSet 0 -> %d Ready", statefulSetReplicas), Unit: UnitSeconds, Value: c.gated.Total.Seconds(),
				Note: "a StatefulSet whose pods carry two readiness gates, set True by the harness in one status write per pod: the gates' cost alone"}.
				Compared("StatefulSet", n.Total.Seconds()),
			Metric{Name: "Advanced StatefulSet against the gated StatefulSet", Unit: UnitSeconds, Value: a.Total.Seconds(),
				Note: "the Advanced StatefulSet's time over what its pods' readiness gates cost with no controller at all"}.
				Compared("gated StatefulSet", c.gated.Total.Seconds()),
		)
	}
	pods := c.advancedRuns * statefulSetReplicas
	m, k := c.advancedPhase.Usage[ManagerName], c.nativePhase.Usage[ControllerManagerName]
	res.Add(
		Metric{Name: "manager writes per pod", Unit: UnitPerPod, Value: float64(writes(c.advancedPhase.Requests)) / float64(pods),
			Note: fmt.Sprintf("%d pods: %s", pods, perPodWrites(c.advancedPhase.Requests, pods))},
		Metric{Name: "manager peak RSS (Advanced StatefulSet runs)", Unit: UnitBytes, Value: float64(m.PeakRSSBytes)}.
			Compared(ControllerManagerName+" in the StatefulSet runs", float64(k.PeakRSSBytes)),
		Metric{Name: "manager CPU per scale-up", Unit: UnitSeconds, Value: m.CPUSeconds / float64(max(c.advancedRuns, 1)),
			Note: fmt.Sprintf("CPU seconds per %d pods; %s (Advanced StatefulSet runs); %s (StatefulSet runs)", statefulSetReplicas,
				usageNote(ManagerName, m), usageNote(ControllerManagerName, k))}.
			Compared(ControllerManagerName, k.CPUSeconds/float64(max(c.nativeRuns, 1))),
		Metric{Name: "manager API writes during the StatefulSet runs", Unit: UnitCount, Value: float64(writes(c.nativePhase.Requests)),
			Note: "the native StatefulSets are not the manager's to touch"},
	)
	res.Add(counterMetrics(statefulSetCounters, c.counters, "", fmt.Sprintf("sum of the %d Advanced StatefulSet runs", c.advancedRuns))...)
}
