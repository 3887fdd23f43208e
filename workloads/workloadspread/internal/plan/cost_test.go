package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func intstrFromString(s string) intstr.IntOrString { return intstr.FromString(s) }

func TestDeletionCosts(t *testing.T) {
	notReady := pod("a-notready", "a", time.Hour)
	notReady.Status.Conditions = nil
	unscheduled := pod("a-unscheduled", "a", time.Hour)
	unscheduled.Spec.NodeName = ""
	ws := spread()
	pods := []*corev1.Pod{pod("a-old", "a", time.Hour), pod("a-new", "a", time.Minute), notReady, unscheduled,
		pod("b-1", "b", 0), pod("c-1", "c", 0), pod("c-2", "c", 0)}
	got := DeletionCosts(ws, BySubset(ws, pods), 4)
	want := map[string]int{
		// a holds 4 of max 2: the unscheduled and the not ready pods are its surplus.
		"a-unscheduled": CostSurplus, "a-notready": CostSurplus, "a-new": CostWithin, "a-old": CostWithin,
		"b-1": CostWithin, "c-1": CostUnlimited, "c-2": CostUnlimited,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("costs (-want +got):\n%s", diff)
	}
	// Among equally healthy pods the newest is surplus first.
	got = DeletionCosts(ws, BySubset(ws, []*corev1.Pod{pod("old", "a", time.Hour), pod("mid", "a", time.Minute), pod("new", "a", 0)}), 4)
	if got["new"] != CostSurplus || got["mid"] != CostWithin || got["old"] != CostWithin {
		t.Errorf("costs by age %v", got)
	}
}

func TestNeedsCost(t *testing.T) {
	p := pod("p", "a", 0)
	if NeedsCost(p, 0) || !NeedsCost(p, 100) {
		t.Error("a pod without the annotation")
	}
	p.Annotations[DeletionCostAnnotation] = "100"
	if NeedsCost(p, 100) || !NeedsCost(p, 0) || !NeedsCost(p, -100) {
		t.Error("a pod with the annotation")
	}
}
