package controller

import (
	"testing"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/daemonset/internal/plan"
)

// What the image pre-download reads of a DaemonSet, as upstream reads it, on 4 nodes.
func TestPreDownloadWorkload(t *testing.T) {
	ds := &kruiseappsv1alpha1.DaemonSet{}
	counts := plan.Counts{Desired: 4, Updated: 2, UpdatedReady: 1}
	for _, tc := range []struct {
		name string
		st   plan.Strategy
		skip bool
	}{
		{name: "OnDelete", st: plan.Strategy{}, skip: true},
		{name: "one node at a time", st: plan.Strategy{Rolling: true, MaxUnavailable: 1}},
		{name: "every node at once", st: plan.Strategy{Rolling: true, MaxUnavailable: 4}, skip: true},
		{name: "every node at once but the partition's", st: plan.Strategy{Rolling: true, MaxUnavailable: 4, Partition: 1}},
		{name: "surging", st: plan.Strategy{Rolling: true, MaxSurge: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := preDownloadWorkload(ds, tc.st, counts)
			if w.Skip != tc.skip || !w.AnyChange || w.Replicas != 4 || w.UpdatedReady != 1 || w.Owner != ds || w.Kind.Kind != "DaemonSet" {
				t.Errorf("workload %+v, want skip %v", w, tc.skip)
			}
		})
	}
}
