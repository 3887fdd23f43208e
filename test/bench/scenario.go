package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

// Scenario is one benchmark. It runs on a fresh cluster of its own.
type Scenario struct {
	Name        string
	Description string
	// Cluster sizes the scenario's control plane (the runner sets Log).
	Cluster cluster.Options
	// NoCluster runs the scenario without a control plane.
	NoCluster bool
	// Scale marks a fleet- or 10k-sized scenario: tens of minutes on the 2-core machine, so `make bench` leaves
	// it to `make bench-scale` unless it is named.
	Scale bool
	// Timeout bounds the whole scenario, cluster start included.
	Timeout time.Duration
	// Run sets up, measures with Env.Measure and fills res.
	Run func(ctx context.Context, env *Env, res *Result) error
}

// Scenarios lists every scenario in the order `make bench` runs them. A
// module's scenario joins by adding its line here.
func Scenarios() []Scenario {
	return []Scenario{
		apiserverFloor(),
		managerIdle(),
		fleetIdle(),
		fleetRelease(),
		deploymentRollout(true),
		deploymentRollout(false),
		deploymentRollout10k(),
		canaryTrafficStep(),
		analysisOverhead(),
		cloneSetScale(),
		cloneSetInPlace(),
		statefulSetScale(),
		statefulSetInPlace(),
		daemonSetUpdate(),
		broadcastJob(),
		imagePullJob(),
		resourceDistribution(),
		sidecarSetInject(),
		sidecarSetUpgrade(),
		pubEviction(),
		luaEval(),
		microBenchmarks(),
	}
}

// Sets of scenarios a run without names selects.
const (
	SetDefault = "default" // every scenario but the scale ones: `make bench`
	SetScale   = "scale"   // the scale ones: `make bench-scale`
	SetAll     = "all"
)

// Select picks scenarios by name, keeping the order of all; no names
// selects the set.
func Select(all []Scenario, names []string, set string) ([]Scenario, error) {
	if len(names) == 0 {
		return inSet(all, set)
	}
	var known []string
	for _, s := range all {
		known = append(known, s.Name)
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return slices.DeleteFunc(slices.Clone(all), func(s Scenario) bool { return !slices.Contains(names, s.Name) }), nil
}

func inSet(all []Scenario, set string) ([]Scenario, error) {
	switch set {
	case SetAll:
		return all, nil
	case SetDefault, SetScale:
		return slices.DeleteFunc(slices.Clone(all), func(s Scenario) bool { return s.Scale != (set == SetScale) }), nil
	}
	return nil, fmt.Errorf("unknown set %q (known: %s, %s, %s)", set, SetDefault, SetScale, SetAll)
}

func clusterSize(s Scenario) ClusterSize {
	if s.NoCluster {
		return ClusterSize{}
	}
	size := ClusterSize{
		Nodes:             s.Cluster.Nodes,
		ControllerManager: s.Cluster.ControllerManager,
		Scheduler:         s.Cluster.Scheduler,
	}
	if size.Nodes > 0 {
		size.PodsPerNode = cmpOr(s.Cluster.PodsPerNode, 110)
	}
	return size
}

func cmpOr(v, fallback int) int {
	if v > 0 {
		return v
	}
	return fallback
}
