package plan

import (
	"encoding/json"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Any decodable UnitedDeployment, however malformed, is planned without a panic, and a plan never gives a
// subset a negative count or a partition above its replicas.
func FuzzDecide(f *testing.F) {
	seed, _ := json.Marshal(ud(n(5), fixed("a", pct("40%")), sub("b"), bounded("c", nil, nil)))
	f.Add(seed)
	f.Add([]byte(`{"spec":{"replicas":3,"selector":{},"template":{"deploymentTemplate":{}},"topology":{"subsets":[{"name":"a","minReplicas":"x"},{"name":"a","patch":{"spec":1}}]},` +
		`"updateStrategy":{"type":"Manual","manualUpdate":{"partitions":{"a":-4}}}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		u := &kruiseappsv1alpha1.UnitedDeployment{}
		if json.Unmarshal(raw, u) != nil {
			return
		}
		u.Spec.Topology.ScheduleStrategy.Type = kruiseappsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType
		a := Schedulability(u, map[string]SubsetPods{"a": {Replicas: 2, Pending: []PendingPod{{Unschedulable: true}}}}, time.Unix(100, 0))
		p, err := Decide(Input{UD: u, Revision: "r", Capacity: a.Capacity, Owned: []client.Object{&kruiseappsv1alpha1.CloneSet{}}})
		if err != nil {
			return
		}
		for name, r := range p.Replicas {
			if r < 0 || p.Partitions[name] > r || p.Partitions[name] < 0 {
				t.Errorf("subset %s: replicas %d partition %d", name, r, p.Partitions[name])
			}
		}
		_ = Status(StatusInput{UD: u, Plan: p, Revision: "r"})
	})
}
