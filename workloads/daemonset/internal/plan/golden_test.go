package plan

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var update = flag.Bool("update", false, "rewrite golden files")

// sim plays the controller and the cluster around the planners: each step plans once and applies the plan
// at once (created pods start not ready, deleted pods vanish), then a second passes and every pod becomes
// ready. It checks the invariants after every step and logs the fleet.
type sim struct {
	t        *testing.T
	nodes    []Node
	pods     map[string][]*corev1.Pod
	strategy Strategy
	now      time.Time
	serial   int
	log      []string
	// served are the nodes that have had an available pod: a node that just joined has none to lose.
	served map[string]bool
}

func newSim(t *testing.T, count int, s Strategy) *sim {
	ns := nodes(count)
	served := map[string]bool{}
	for _, n := range ns {
		served[n.Name] = true
	}
	return &sim{t: t, nodes: ns, pods: fleet(ns), strategy: s, now: t0, served: served}
}

func (s *sim) input() Input {
	return Input{Now: s.now, Strategy: s.strategy, Revision: Revision{Hash: "v2"}, Nodes: s.nodes, Pods: s.pods}
}

// run steps until nothing changes, at most limit steps.
func (s *sim) run(limit int) {
	for i := 0; i < limit; i++ {
		if !s.step() {
			return
		}
	}
	s.t.Fatalf("still changing after %d steps:\n%s", limit, strings.Join(s.log, "\n"))
}

func (s *sim) step() bool {
	in := s.input()
	what := ""
	if m := PlanManage(in); !m.Empty() {
		what = fmt.Sprintf("manage: create [%s] delete [%s]", strings.Join(m.Create, " "), names(m.Delete))
		s.remove(m.Delete)
		s.create(m.Create)
	} else if u := PlanUpdate(in); !u.Empty() {
		what = fmt.Sprintf("update: replace [%s] create [%s] delete [%s]", names(u.Replace), strings.Join(u.Create, " "), names(u.Delete))
		s.replace(u.Replace)
		s.create(u.Create)
		s.remove(u.Delete)
	} else {
		return false
	}
	s.check()
	s.log = append(s.log, fmt.Sprintf("%-70s | %s", what, s.fleet()))
	s.tick()
	return true
}

func (s *sim) create(nodes []string) {
	for _, n := range nodes {
		s.serial++
		p := pod(fmt.Sprintf("%s-v2-%d", n, s.serial), n, "v2", 0, notReady)
		p.CreationTimestamp = metav1.NewTime(s.now)
		s.pods[n] = append(s.pods[n], p)
	}
}

func (s *sim) remove(pods []*corev1.Pod) {
	for _, p := range pods {
		for n, list := range s.pods {
			s.pods[n] = slices.DeleteFunc(list, func(q *corev1.Pod) bool { return q == p })
			if len(s.pods[n]) == 0 {
				delete(s.pods, n)
			}
		}
	}
}

// replace updates pods in place for an in-place strategy (same pod, new revision, not ready until the next
// second), or deletes them.
func (s *sim) replace(pods []*corev1.Pod) {
	if !s.strategy.InPlace {
		s.remove(pods)
		return
	}
	for _, p := range pods {
		p.Labels[HashLabel] = "v2"
		p.Name += "~v2"
		notReady(p)
	}
}

func (s *sim) tick() {
	s.now = s.now.Add(time.Second)
	for _, list := range s.pods {
		for _, p := range list {
			if !Ready(p) {
				p.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(s.now)}
			}
		}
	}
}

// check holds the invariants: never two pods on a node outside a surge, never more than maxUnavailable of the
// nodes that were served without an available pod (maxUnavailable and maxSurge are exclusive, as the webhook
// requires).
func (s *sim) check() {
	unavailable := 0
	for _, node := range s.nodes {
		pods := s.pods[node.Name]
		if len(pods) > 1 && s.strategy.MaxSurge == 0 || len(pods) > 2 {
			s.t.Fatalf("node %s runs %d pods: %s\n%s", node.Name, len(pods), names(pods), strings.Join(s.log, "\n"))
		}
		switch {
		case !node.ShouldRun:
		case slices.ContainsFunc(pods, func(p *corev1.Pod) bool { ok, _ := Available(p, 0, s.now); return ok }):
			s.served[node.Name] = true
		case s.served[node.Name]:
			unavailable++
		}
	}
	if s.strategy.MaxSurge == 0 && unavailable > s.strategy.MaxUnavailable {
		s.t.Fatalf("%d nodes without an available pod, maxUnavailable %d\n%s", unavailable, s.strategy.MaxUnavailable, strings.Join(s.log, "\n"))
	}
	if s.strategy.MaxSurge > 0 && unavailable > 0 {
		s.t.Fatalf("a surge left %d nodes without an available pod\n%s", unavailable, strings.Join(s.log, "\n"))
	}
}

// fleet shows each node's pods: revision, * when not ready.
func (s *sim) fleet() string {
	var parts []string
	for _, node := range s.nodes {
		var revs []string
		for _, p := range s.pods[node.Name] {
			rev := p.Labels[HashLabel]
			if !Ready(p) {
				rev += "*"
			}
			revs = append(revs, rev)
		}
		parts = append(parts, node.Name+"="+strings.Join(revs, "+"))
	}
	return strings.Join(parts, " ")
}

func (s *sim) golden(name string) {
	s.t.Helper()
	path := filepath.Join("testdata", name+".golden")
	got := strings.Join(s.log, "\n") + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		s.t.Errorf("%s differs from the golden sequence:\ngot:\n%swant:\n%s", path, got, want)
	}
}

func (s *sim) updated() int {
	n := 0
	for _, node := range s.nodes {
		for _, p := range s.pods[node.Name] {
			if p.Labels[HashLabel] == "v2" {
				n++
			}
		}
	}
	return n
}

// The golden sequences: a whole rolling update step by step, as the controller would make it.
func TestGoldenSequences(t *testing.T) {
	withPartition := rolling(6, 0)
	withPartition.Partition = 4
	canary := rolling(1, 0)
	canary.Selector = nil
	inPlace := rolling(1, 0)
	inPlace.InPlace = true
	tests := []struct {
		name     string
		strategy Strategy
		selected []int
		want     int
	}{
		{"standard-6-nodes-max-unavailable-2", rolling(2, 0), nil, 6},
		{"surge-6-nodes-max-surge-2", rolling(0, 2), nil, 6},
		{"partition-4-of-6", withPartition, nil, 2},
		{"selector-canary-2-of-6", canary, []int{1, 4}, 2},
		{"in-place-6-nodes-max-unavailable-1", inPlace, nil, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSim(t, 6, tt.strategy)
			if tt.selected != nil {
				for i := range s.nodes {
					s.nodes[i].Selected = slices.Contains(tt.selected, i)
				}
			}
			s.run(30)
			if got := s.updated(); got != tt.want {
				t.Errorf("%d nodes updated, want %d", got, tt.want)
			}
			s.golden(tt.name)
		})
	}
}

// A node joins and another leaves in the middle of an update: the new node gets an updated pod at once,
// the removed node's pod goes, and the update finishes on the others.
func TestGoldenNodeChurn(t *testing.T) {
	s := newSim(t, 6, rolling(1, 0))
	for range 3 {
		s.step()
	}
	s.nodes = append(s.nodes[1:], Node{Name: "n6", ShouldRun: true, ShouldContinue: true, Selected: true})
	s.log = append(s.log, "--- node n6 joins, node n0 is removed")
	s.run(30)
	if got := s.updated(); got != 6 || len(s.pods["n0"]) != 0 {
		t.Errorf("%d nodes updated, want 6; n0 pods %s", got, names(s.pods["n0"]))
	}
	s.golden("node-churn-6-nodes")
}
