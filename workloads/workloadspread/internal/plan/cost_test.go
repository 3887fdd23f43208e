package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
		pod("b-1", "b", 0), pod("b-2", "b", 0), pod("b-3", "b", 0), pod("c-1", "c", 0), pod("c-2", "c", 0),
		pod("none", "", 0), pod("gone-subset", "z", 0)}
	got := DeletionCosts(ws, pods, 4)
	want := map[string]int{
		// a (index 0 of 3) holds 4 of max 2: the unscheduled and the not ready pods are its surplus.
		"a-unscheduled": -100, "a-notready": -100, "a-new": 300, "a-old": 300,
		// b (index 1) holds 3 of 50% of 4: one surplus.
		"b-1": 200, "b-2": 200, "b-3": -200,
		// c (index 2) has no limit.
		"c-1": 100, "c-2": 100,
		// Pods in no subset of the spread go first of all.
		"none": -400, "gone-subset": -400,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("costs (-want +got):\n%s", diff)
	}
	// Among equally healthy pods the newest is surplus first.
	got = DeletionCosts(ws, []*corev1.Pod{pod("old", "a", time.Hour), pod("mid", "a", time.Minute), pod("new", "a", 0)}, 4)
	if got["new"] != -100 || got["mid"] != 300 || got["old"] != 300 {
		t.Errorf("costs by age %v", got)
	}
}

func TestReadsCosts(t *testing.T) {
	for gk, want := range map[schema.GroupKind]bool{
		{Group: "apps", Kind: "ReplicaSet"}: true, {Group: "apps", Kind: "Deployment"}: true,
		{Group: "apps.kruise.io", Kind: "CloneSet"}: true, {Group: "apps", Kind: "StatefulSet"}: false,
		{Group: "apps.kruise.io", Kind: "StatefulSet"}: false, {Group: "batch", Kind: "Job"}: false,
	} {
		if got := ReadsCosts(gk); got != want {
			t.Errorf("ReadsCosts(%v) = %v, want %v", gk, got, want)
		}
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
