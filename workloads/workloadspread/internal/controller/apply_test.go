package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Only a subset newly marked unschedulable is reported.
func TestNewlyUnschedulable(t *testing.T) {
	mark := func(names ...string) kruiseappsv1alpha1.WorkloadSpreadStatus {
		var st kruiseappsv1alpha1.WorkloadSpreadStatus
		for _, n := range []string{"a", "b", "c"} {
			s := kruiseappsv1alpha1.WorkloadSpreadSubsetStatus{Name: n}
			for _, m := range names {
				if m == n {
					s.Conditions = []kruiseappsv1alpha1.WorkloadSpreadSubsetCondition{{Type: kruiseappsv1alpha1.SubsetSchedulable, Status: corev1.ConditionFalse}}
				}
			}
			st.SubsetStatuses = append(st.SubsetStatuses, s)
		}
		return st
	}
	if diff := cmp.Diff([]string{"b"}, newlyUnschedulable(mark("a", "c"), mark("a", "b"))); diff != "" {
		t.Errorf("newly unschedulable (-want +got):\n%s", diff)
	}
}
