package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

func TestCount(t *testing.T) {
	ns := nodes(5)
	ns[4].ShouldRun, ns[4].ShouldContinue = false, false
	inPlacePending := func(p *corev1.Pod) {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: kruiseappspub.InPlaceUpdateReady}}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: kruiseappspub.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	}
	pods := map[string][]*corev1.Pod{
		// n0: updated and available. n1: old, ready but within minReadySeconds. n2: the oldest pod is old (surge).
		"n0": {pod("a", "n0", "v2", 9)},
		"n1": {pod("b", "n1", "v1", 9, readyFor(time.Second))},
		"n2": {pod("c", "n2", "v1", 9), pod("d", "n2", "v2", 1)},
		// n3: no pod. n4: a pod where none should run. n5 is no node at all.
		"n4": {pod("e", "n4", "v2", 9)},
		"n5": {pod("f", "n5", "v2", 9)},
	}
	in := input(ns, pods, func() Strategy { s := rolling(1, 0); s.MinReadySeconds = 5; return s }())
	want := Counts{Desired: 4, Current: 3, Misscheduled: 1, Ready: 3, Updated: 1, Available: 2, UpdatedReady: 1}
	if diff := cmp.Diff(want, Count(in)); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	pods["n0"] = []*corev1.Pod{pod("a", "n0", "v2", 9, inPlacePending)}
	if got := Count(in); got.Available != 1 || got.Ready != 3 {
		t.Errorf("an in-place update in flight: available=%d ready=%d, want 1 and 3", got.Available, got.Ready)
	}
	if got := Count(in).Unavailable(); got != 3 {
		t.Errorf("unavailable = %d, want 3", got)
	}
}

// A node counts by its oldest pod, as kube ranks them; of pods created in the same second, another revision's
// goes before an updated one, which a surge created beside it.
func TestOldest(t *testing.T) {
	tests := []struct {
		name string
		pods []*corev1.Pod
		want string
	}{
		{name: "the older pod, whatever its revision",
			pods: []*corev1.Pod{pod("new", "n0", "v2", 1), pod("old", "n0", "v1", 9)}, want: "old"},
		{name: "an updated pod older than the other revision's (a rollback)",
			pods: []*corev1.Pod{pod("b", "n0", "v1", 1), pod("a", "n0", "v2", 9)}, want: "a"},
		{name: "same second: the old revision's pod, though the surge's new pod sorts first by name",
			pods: []*corev1.Pod{pod("a-new", "n0", "v2", 5, notReady), pod("z-old", "n0", "v1", 5)}, want: "z-old"},
		{name: "same second: the old revision's pod while it terminates",
			pods: []*corev1.Pod{pod("a-new", "n0", "v2", 5), pod("z-old", "n0", "v1", 5, deleting)}, want: "z-old"},
		{name: "same second: past every updated pod of that second",
			pods: []*corev1.Pod{pod("a-new", "n0", "v2", 5), pod("b-new", "n0", "v2", 5), pod("z-old", "n0", "v1", 5)}, want: "z-old"},
		{name: "same second and revision: by name, as kube",
			pods: []*corev1.Pod{pod("b", "n0", "v1", 5), pod("a", "n0", "v1", 5)}, want: "a"},
		{name: "an older updated pod keeps its rank over a later second's tie",
			pods: []*corev1.Pod{pod("c-old", "n0", "v1", 5), pod("b-new", "n0", "v2", 5), pod("a-new", "n0", "v2", 9)}, want: "a-new"},
		{name: "a bound pod outranks an unbound one of the same second",
			pods: []*corev1.Pod{pod("a-new", "n0", "v2", 5), pod("z-old", "n0", "v1", 5, unbound)}, want: "a-new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Revision{Hash: "v2"}).oldest(tt.pods).Name; got != tt.want {
				t.Errorf("oldest = %s, want %s", got, tt.want)
			}
		})
	}
}

// A surge whose new pod shares its old pod's creation second: the node stays available, and not yet updated,
// until the old pod goes.
func TestCountSurgeWithinASecond(t *testing.T) {
	pods := map[string][]*corev1.Pod{"n0": {pod("a-new", "n0", "v2", 0, notReady), pod("z-old", "n0", "v1", 0)}}
	want := Counts{Desired: 1, Current: 1, Ready: 1, Available: 1}
	if diff := cmp.Diff(want, Count(input(nodes(1), pods, rolling(0, 1)))); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

func TestConditions(t *testing.T) {
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	foreign := appsv1.DaemonSetCondition{Type: "Example", Status: corev1.ConditionTrue, LastTransitionTime: earlier}
	tests := []struct {
		name     string
		prev     []appsv1.DaemonSetCondition
		progress Progress
		want     []appsv1.DaemonSetCondition
	}{
		{name: "done", prev: []appsv1.DaemonSetCondition{foreign},
			progress: Progress{Counts: Counts{Desired: 3, Current: 3, Ready: 3, Updated: 3, Available: 3}, Target: 3},
			want: []appsv1.DaemonSetCondition{foreign,
				{Type: ConditionReady, Status: corev1.ConditionTrue, Reason: ReasonAvailable, Message: "every node has an available pod of the update revision (3)", LastTransitionTime: metav1.NewTime(t0)},
				{Type: ConditionReconciling, Status: corev1.ConditionFalse, Reason: ReasonAvailable, LastTransitionTime: metav1.NewTime(t0)}}},
		{name: "rolling, still serving everywhere", progress: Progress{Counts: Counts{Desired: 3, Current: 3, Ready: 3, Updated: 1, Available: 3}, Target: 3},
			prev: []appsv1.DaemonSetCondition{{Type: ConditionReconciling, Status: corev1.ConditionTrue, Reason: ReasonProgressing, LastTransitionTime: earlier}},
			want: []appsv1.DaemonSetCondition{
				{Type: ConditionReconciling, Status: corev1.ConditionTrue, Reason: ReasonProgressing, LastTransitionTime: earlier,
					Message: "3 of 3 nodes have an available pod, 1 of 3 to update run the update revision"},
				{Type: ConditionReady, Status: corev1.ConditionFalse, Reason: ReasonProgressing, LastTransitionTime: metav1.NewTime(t0),
					Message: "3 of 3 nodes have an available pod, 1 of 3 to update run the update revision"}}},
		{name: "held by the partition, with a failure", progress: Progress{Counts: Counts{Desired: 3, Current: 3, Ready: 3, Updated: 1, Available: 3},
			Target: 1, Held: true, Failure: &Failure{Reason: "FailedCreate", Message: "quota"}},
			want: []appsv1.DaemonSetCondition{
				{Type: ConditionReady, Status: corev1.ConditionTrue, Reason: ReasonUpdateHeld, LastTransitionTime: metav1.NewTime(t0),
					Message: "every node has an available pod; 1 of 3 run the update revision, as the update strategy holds it"},
				{Type: ConditionReconciling, Status: corev1.ConditionFalse, Reason: ReasonAvailable, LastTransitionTime: metav1.NewTime(t0)},
				{Type: ConditionStalled, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "quota", LastTransitionTime: metav1.NewTime(t0)}}},
		{name: "a node without a pod", progress: Progress{Counts: Counts{Desired: 3, Current: 2, Ready: 2, Updated: 2, Available: 2}, Target: 3},
			prev: []appsv1.DaemonSetCondition{{Type: ConditionStalled, Status: corev1.ConditionTrue, Reason: "FailedCreate"}},
			want: []appsv1.DaemonSetCondition{
				{Type: ConditionReady, Status: corev1.ConditionFalse, Reason: ReasonPodsUnavailable, LastTransitionTime: metav1.NewTime(t0),
					Message: "2 of 3 nodes have an available pod"},
				{Type: ConditionReconciling, Status: corev1.ConditionTrue, Reason: ReasonProgressing, LastTransitionTime: metav1.NewTime(t0),
					Message: "2 of 3 nodes have an available pod, 2 of 3 to update run the update revision"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Conditions(tt.prev, tt.progress, t0)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProgressOf(t *testing.T) {
	six := nodes(6)
	c := Counts{Desired: 6, Current: 6, Ready: 6, Updated: 2, Available: 6}
	partition := rolling(1, 0)
	partition.Partition = 4
	paused := rolling(1, 0)
	paused.Paused = true
	for _, tt := range []struct {
		name   string
		s      Strategy
		target int
		held   bool
	}{
		{"rolling", rolling(1, 0), 6, false},
		{"partition", partition, 2, true},
		{"paused where it stands", paused, 2, true},
		{"OnDelete where it stands", Strategy{}, 2, true},
	} {
		p := ProgressOf(input(six, fleet(six), tt.s), c, nil)
		if p.Target != tt.target || p.Held != tt.held {
			t.Errorf("%s: target=%d held=%v, want %d and %v", tt.name, p.Target, p.Held, tt.target, tt.held)
		}
	}
}
