package plan

import (
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Partitions gives each subset its workload's partition: under the Manual strategy the one
// manualUpdate.partitions names (0 for a subset it does not name), capped at the subset's replicas, as
// upstream; 0 everywhere under any other strategy.
func Partitions(ud *kruiseappsv1alpha1.UnitedDeployment, replicas map[string]int32) map[string]int32 {
	out := make(map[string]int32, len(ud.Spec.Topology.Subsets))
	var set map[string]int32
	if us := ud.Spec.UpdateStrategy; us.Type == kruiseappsv1alpha1.ManualUpdateStrategyType && us.ManualUpdate != nil {
		set = us.ManualUpdate.Partitions
	}
	for _, s := range ud.Spec.Topology.Subsets {
		p := max(set[s.Name], 0)
		if n, ok := replicas[s.Name]; ok && p > n {
			p = n
		}
		out[s.Name] = p
	}
	return out
}
