package plan

import (
	"maps"
	"strings"
	"testing"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestAllocate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ud       *kruiseappsv1alpha1.UnitedDeployment
		current  map[string]int32
		capacity map[string]Capacity
		want     map[string]int32
		err      string
	}{
		{name: "even split", ud: ud(n(6), sub("a"), sub("b"), sub("c")), want: map[string]int32{"a": 2, "b": 2, "c": 2}},
		{name: "remainder to the later names when none runs", ud: ud(n(5), sub("a"), sub("b"), sub("c")),
			want: map[string]int32{"a": 1, "b": 2, "c": 2}},
		{name: "remainder to the subsets running most", ud: ud(n(5), sub("a"), sub("b"), sub("c")),
			current: map[string]int32{"a": 3, "b": 1, "c": 0}, want: map[string]int32{"a": 2, "b": 2, "c": 1}},
		{name: "fixed count and the rest shared", ud: ud(n(10), fixed("a", i(4)), sub("b"), sub("c")),
			want: map[string]int32{"a": 4, "b": 3, "c": 3}},
		{name: "percentage rounds half up", ud: ud(n(5), fixed("a", pct("50%")), sub("b")),
			want: map[string]int32{"a": 3, "b": 2}},
		{name: "scale down", ud: ud(n(2), sub("a"), sub("b"), sub("c")), current: map[string]int32{"a": 2, "b": 2, "c": 2},
			want: map[string]int32{"a": 0, "b": 1, "c": 1}},
		{name: "scale to zero", ud: ud(n(0), fixed("a", pct("20%")), sub("b")), want: map[string]int32{"a": 0, "b": 0}},
		{name: "all fixed, matching", ud: ud(n(3), fixed("a", i(1)), fixed("b", i(2))), want: map[string]int32{"a": 1, "b": 2}},
		{name: "all fixed without a total", ud: ud(nil, fixed("a", i(1)), fixed("b", i(2))), want: map[string]int32{"a": 1, "b": 2}},
		{name: "all fixed, short", ud: ud(n(4), fixed("a", i(1)), fixed("b", i(2))), err: "sum to 3, not spec.replicas (4)"},
		{name: "fixed above the total", ud: ud(n(2), fixed("a", i(3)), sub("b")), err: "exceed spec.replicas"},
		{name: "no total, a free subset", ud: ud(nil, fixed("a", i(1)), sub("b")), err: ErrUnsetTotal.Error()},
		{name: "bad percentage", ud: ud(n(2), fixed("a", pct("abc")), sub("b")), err: "subset a replicas"},
		{name: "min then max in list order", ud: ud(n(5), bounded("a", ip(i(2)), ip(i(4))), bounded("b", ip(i(2)), nil)),
			want: map[string]int32{"a": 3, "b": 2}}, // upstream's documented example
		{name: "mins beyond the total", ud: ud(n(3), bounded("a", ip(i(2)), nil), bounded("b", ip(i(2)), nil)),
			want: map[string]int32{"a": 2, "b": 1}},
		{name: "max reached then the unbounded", ud: ud(n(10), bounded("a", nil, ip(pct("30%"))), bounded("b", nil, nil)),
			want: map[string]int32{"a": 3, "b": 7}},
		{name: "min above max", ud: ud(n(10), bounded("a", ip(i(5)), ip(i(2))), sub("b")), err: "minReplicas (5) exceeds maxReplicas (2)"},
		{name: "adaptive: an unschedulable subset keeps its running pods", ud: adaptive(ud(n(6), bounded("a", nil, ip(i(6))), bounded("b", nil, nil))),
			capacity: map[string]Capacity{"a": {Unschedulable: true, Running: 2}, "b": {}}, want: map[string]int32{"a": 2, "b": 4}},
		{name: "adaptive: a schedulable subset keeps its running pods", ud: adaptive(ud(n(6), bounded("a", nil, ip(i(2))), bounded("b", nil, nil))),
			capacity: map[string]Capacity{"a": {Running: 1}, "b": {Running: 5}}, want: map[string]int32{"a": 1, "b": 5}},
		{name: "fixed strategy ignores capacity", ud: ud(n(6), bounded("a", nil, ip(i(6))), bounded("b", nil, nil)),
			capacity: map[string]Capacity{"a": {Unschedulable: true}}, want: map[string]int32{"a": 6, "b": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Allocate(tc.ud, tc.current, tc.capacity)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Errorf("got %v (%v), want %v", got, err, tc.want)
			}
		})
	}
}

func adaptive(u *kruiseappsv1alpha1.UnitedDeployment) *kruiseappsv1alpha1.UnitedDeployment {
	u.Spec.Topology.ScheduleStrategy.Type = kruiseappsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType
	return u
}

func TestPartitions(t *testing.T) {
	u := ud(n(6), sub("a"), sub("b"), sub("c"))
	u.Spec.UpdateStrategy.ManualUpdate = &kruiseappsv1alpha1.ManualUpdate{Partitions: map[string]int32{"a": 1, "b": 9}}
	replicas := map[string]int32{"a": 2, "b": 2, "c": 2}
	if got := Partitions(u, replicas); !maps.Equal(got, map[string]int32{"a": 0, "b": 0, "c": 0}) {
		t.Errorf("without the Manual type: %v, want zeros", got)
	}
	u.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.ManualUpdateStrategyType
	if got := Partitions(u, replicas); !maps.Equal(got, map[string]int32{"a": 1, "b": 2, "c": 0}) {
		t.Errorf("Manual: %v, want a 1, b capped at its 2 replicas, c 0", got)
	}
}
