package plan

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestPlanManage(t *testing.T) {
	three := nodes(3)
	tainted := nodes(3)
	tainted[1].ShouldRun = false // NoSchedule: no new pod, the old one stays
	gone := nodes(3)
	gone[2].ShouldRun, gone[2].ShouldContinue = false, false
	tests := []struct {
		name       string
		nodes      []Node
		pods       map[string][]*corev1.Pod
		strategy   Strategy
		backoff    map[string]bool
		wantCreate string
		wantDelete string
		wantFailed string
		wantWake   time.Duration
	}{
		{name: "a pod for every node without one", nodes: three, strategy: rolling(1, 0),
			pods:       map[string][]*corev1.Pod{"n1": {pod("a", "n1", "v1", 9)}},
			wantCreate: "n0,n2"},
		{name: "no new pod while the node's last one terminates", nodes: three, strategy: rolling(1, 0),
			pods:       map[string][]*corev1.Pod{"n0": {pod("a", "n0", "v1", 9, deleting)}, "n1": {pod("b", "n1", "v1", 9)}},
			wantCreate: "n2"},
		{name: "the oldest of two pods stays", nodes: three[:1], strategy: rolling(1, 0),
			pods: map[string][]*corev1.Pod{"n0": {pod("young", "n0", "v2", 1), pod("old", "n0", "v1", 9)}}, wantDelete: "young"},
		{name: "a bound pod outranks an older one still unbound", nodes: three[:1], strategy: rolling(1, 0),
			pods: map[string][]*corev1.Pod{"n0": {pod("old", "n0", "v1", 9, unbound), pod("bound", "n0", "v2", 1)}}, wantDelete: "old"},
		{name: "an untolerated NoSchedule taint keeps the pod, an ineligible node loses it", nodes: func() []Node {
			ns := append([]Node(nil), tainted...)
			ns[2] = gone[2]
			return ns
		}(), strategy: rolling(1, 0), pods: fleet(three), wantDelete: "n2-v1"},
		{name: "a failed pod goes, with its event", nodes: three[:1], strategy: rolling(1, 0),
			pods: map[string][]*corev1.Pod{"n0": {pod("bad", "n0", "v1", 9, failed)}}, wantDelete: "bad", wantFailed: "bad"},
		{name: "but not twice within its backoff", nodes: three[:1], strategy: rolling(1, 0), backoff: map[string]bool{"n0": true},
			pods: map[string][]*corev1.Pod{"n0": {pod("bad", "n0", "v1", 9, failed)}}},
		{name: "a pod preparing deletion goes (through its hook)", nodes: three[:1], strategy: rolling(1, 0),
			pods: map[string][]*corev1.Pod{"n0": {pod("hooked", "n0", "v1", 9, preDeleting)}}, wantDelete: "hooked"},
		{name: "pods of nodes that no longer exist go, bound or not", nodes: three[:1], strategy: rolling(1, 0),
			pods: map[string][]*corev1.Pod{"n0": {pod("a", "n0", "v1", 9)}, "n7": {pod("b", "n7", "v1", 9)},
				"n8": {pod("c", "n8", "v1", 9, unbound), pod("d", "n8", "v1", 9, deleting)}}, wantDelete: "b,c"},
		{name: "surge: old and new side by side while the new one is not available", nodes: three[:1], strategy: rolling(0, 1),
			pods: map[string][]*corev1.Pod{"n0": {pod("old", "n0", "v1", 9), pod("new", "n0", "v2", 1, notReady)}}},
		{name: "surge: the old pod goes once the new one is available", nodes: three[:1], strategy: rolling(0, 1),
			pods: map[string][]*corev1.Pod{"n0": {pod("old", "n0", "v1", 9), pod("new", "n0", "v2", 1)}}, wantDelete: "old"},
		{name: "surge: an old pod that is not ready goes at once", nodes: three[:1], strategy: rolling(0, 1),
			pods: map[string][]*corev1.Pod{"n0": {pod("old", "n0", "v1", 9, notReady), pod("new", "n0", "v2", 1, notReady)}}, wantDelete: "old"},
		{name: "surge: wait for minReadySeconds before the old pod goes", nodes: three[:1],
			strategy: func() Strategy { s := rolling(0, 1); s.MinReadySeconds = 10; return s }(),
			pods:     map[string][]*corev1.Pod{"n0": {pod("old", "n0", "v1", 9), pod("new", "n0", "v2", 1, readyFor(4*time.Second))}},
			wantWake: 6 * time.Second},
		{name: "surge: a node whose only pod prepares deletion gets a new one beside it", nodes: three[:1], strategy: rolling(0, 1),
			pods: map[string][]*corev1.Pod{"n0": {pod("hooked", "n0", "v1", 9, preDeleting)}}, wantCreate: "n0", wantDelete: "hooked"},
		{name: "progressive: the partition holds back new nodes too", nodes: nodes(4),
			strategy: func() Strategy { s := rolling(1, 0); s.Partition, s.Progressive = 2, true; return s }(),
			pods:     map[string][]*corev1.Pod{"n3": {pod("a", "n3", "v2", 9)}}, wantCreate: "n0"},
		{name: "without the annotation the partition holds back updates only", nodes: nodes(4),
			strategy: func() Strategy { s := rolling(1, 0); s.Partition = 2; return s }(),
			pods:     map[string][]*corev1.Pod{"n3": {pod("a", "n3", "v2", 9)}}, wantCreate: "n0,n1,n2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(tt.nodes, tt.pods, tt.strategy)
			in.Backoff = tt.backoff
			m := PlanManage(in)
			if got := strings.Join(m.Create, ","); got != tt.wantCreate {
				t.Errorf("create = %q, want %q", got, tt.wantCreate)
			}
			if got := names(m.Delete); got != tt.wantDelete {
				t.Errorf("delete = %q, want %q", got, tt.wantDelete)
			}
			if got := names(m.Failed); got != tt.wantFailed {
				t.Errorf("failed = %q, want %q", got, tt.wantFailed)
			}
			if m.Wake != tt.wantWake {
				t.Errorf("wake = %v, want %v", m.Wake, tt.wantWake)
			}
		})
	}
}
