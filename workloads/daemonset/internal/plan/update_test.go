package plan

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func withPods(base map[string][]*corev1.Pod, node string, pods ...*corev1.Pod) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for k, v := range base {
		out[k] = v
	}
	out[node] = pods
	return out
}

func TestPlanUpdate(t *testing.T) {
	six := nodes(6)
	old := fleet(six)
	canary := nodes(6)
	for i := range canary {
		canary[i].Selected = i == 1 || i == 4
	}
	with := func(mutate func(*Strategy), base Strategy) Strategy { mutate(&base); return base }
	tests := []struct {
		name        string
		nodes       []Node
		pods        map[string][]*corev1.Pod
		strategy    Strategy
		wantReplace string
		wantCreate  string
		wantDelete  string
		wantWake    time.Duration
		wantTarget  int
	}{
		{name: "maxUnavailable 2: two nodes at a time, from the last name", nodes: six, pods: old, strategy: rolling(2, 0),
			wantReplace: "n5-v1,n4-v1", wantTarget: 6},
		{name: "an unavailable updated pod counts against maxUnavailable", nodes: six, strategy: rolling(2, 0), wantTarget: 6,
			pods:        withPods(old, "n5", pod("n5-v2", "n5", "v2", 1, notReady)),
			wantReplace: "n4-v1"},
		{name: "a node between pods counts against maxUnavailable", nodes: six, strategy: rolling(2, 0), wantTarget: 6,
			pods: withPods(withPods(old, "n5"), "n4", pod("n4-v1", "n4", "v1", 9, preDeleting)), wantReplace: ""},
		{name: "an old pod that is not available is replaced whatever the limit", nodes: six, strategy: rolling(1, 0), wantTarget: 6,
			pods:        withPods(withPods(old, "n5", pod("n5-v2", "n5", "v2", 1, notReady)), "n2", pod("n2-v1", "n2", "v1", 9, notReady)),
			wantReplace: "n2-v1"},
		{name: "minReadySeconds: an updated pod not yet available holds the next one", nodes: six, wantTarget: 6,
			strategy:    with(func(s *Strategy) { s.MinReadySeconds = 30 }, rolling(1, 0)),
			pods:        withPods(old, "n5", pod("n5-v2", "n5", "v2", 1, readyFor(10*time.Second))),
			wantReplace: "", wantWake: 20 * time.Second},
		{name: "partition 4 of 6: the last two names update", nodes: six, pods: old, wantTarget: 2,
			strategy: with(func(s *Strategy) { s.Partition = 4 }, rolling(6, 0)), wantReplace: "n5-v1,n4-v1"},
		{name: "partition counts updated nodes first", nodes: six, wantTarget: 2,
			pods:        withPods(old, "n0", pod("n0-v2", "n0", "v2", 1)),
			strategy:    with(func(s *Strategy) { s.Partition = 4 }, rolling(6, 0)),
			wantReplace: "n5-v1"},
		{name: "partition of every node: nothing", nodes: six, pods: old, wantTarget: 0,
			strategy: with(func(s *Strategy) { s.Partition = 6 }, rolling(6, 0))},
		{name: "selector: only the canary nodes", nodes: canary, pods: old, wantTarget: 2,
			strategy: with(func(s *Strategy) { s.Selector = labels.Everything() }, rolling(6, 0)), wantReplace: "n4-v1,n1-v1"},
		{name: "paused: nothing", nodes: six, pods: old, strategy: with(func(s *Strategy) { s.Paused = true }, rolling(6, 0)), wantTarget: 6},
		{name: "OnDelete: nothing", nodes: six, pods: old, strategy: Strategy{}, wantTarget: 6},
		{name: "maxSurge 2: two nodes get a new pod beside the old one", nodes: six, pods: old, strategy: rolling(0, 2),
			wantCreate: "n5,n4", wantTarget: 6},
		{name: "surge: an available new pod retires the old one and frees its slot", nodes: six, strategy: rolling(0, 2), wantTarget: 6,
			pods:       withPods(old, "n5", pod("n5-v1", "n5", "v1", 9), pod("n5-v2", "n5", "v2", 1)),
			wantDelete: "n5-v1", wantCreate: "n4,n3"},
		{name: "surge: a new pod not yet available holds its slot", nodes: six, strategy: rolling(0, 2), wantTarget: 6,
			pods:       withPods(old, "n5", pod("n5-v1", "n5", "v1", 9), pod("n5-v2", "n5", "v2", 1, notReady)),
			wantCreate: "n4"},
		{name: "surge: a node whose old pod is not available gets its new pod at once", nodes: six, strategy: rolling(0, 1), wantTarget: 6,
			pods:       withPods(withPods(old, "n5", pod("n5-v1", "n5", "v1", 9), pod("n5-v2", "n5", "v2", 1, notReady)), "n0", pod("n0-v1", "n0", "v1", 9, notReady)),
			wantCreate: "n0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(tt.nodes, tt.pods, tt.strategy)
			u := PlanUpdate(in)
			if got := names(u.Replace); got != tt.wantReplace {
				t.Errorf("replace = %q, want %q", got, tt.wantReplace)
			}
			if got := strings.Join(u.Create, ","); got != tt.wantCreate {
				t.Errorf("create = %q, want %q", got, tt.wantCreate)
			}
			if got := names(u.Delete); got != tt.wantDelete {
				t.Errorf("delete = %q, want %q", got, tt.wantDelete)
			}
			if u.Wake != tt.wantWake {
				t.Errorf("wake = %v, want %v", u.Wake, tt.wantWake)
			}
			if got := Target(in); got != tt.wantTarget {
				t.Errorf("target = %d, want %d", got, tt.wantTarget)
			}
		})
	}
}
