package plan

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of the simulated stories")

// sim is a set's pods as the planner sees them between two reconciles. Every pass it applies the step (a new
// or updated pod is not Ready, a deleted one terminates), then one pass later the kubelet's work is done:
// terminated pods are gone, the others Ready.
type sim struct {
	in    Input
	pods  map[int32]*corev1.Pod
	lines []string
}

func newSim(in Input, existing ...*corev1.Pod) *sim {
	s := &sim{in: in, pods: map[int32]*corev1.Pod{}}
	for _, p := range existing {
		s.pods[Ordinal(set, p.Name)] = p
	}
	return s
}

// run plans and applies passes until one changes nothing, logging each.
func (s *sim) run(t *testing.T, title string) {
	t.Helper()
	s.lines = append(s.lines, "# "+title, "start: "+s.render())
	for pass := 1; ; pass++ {
		if pass > 30 {
			t.Fatalf("%s: no fixed point after 30 passes:\n%s", title, strings.Join(s.lines, "\n"))
		}
		s.in.Pods = s.list()
		step := Plan(s.in)
		if s.apply(step) == 0 && s.settle() == 0 {
			s.lines = append(s.lines, fmt.Sprintf("pass %d: nothing to do", pass))
			return
		}
		s.lines = append(s.lines, fmt.Sprintf("pass %d: %s -> %s", pass, describe(step), s.render()))
	}
}

func (s *sim) list() []*corev1.Pod {
	var out []*corev1.Pod
	for _, n := range s.ordinals() {
		out = append(out, s.pods[n].DeepCopy())
	}
	return out
}

func (s *sim) ordinals() []int32 {
	var ns []int32
	for n := range s.pods {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// apply carries out a step and returns how many things it did.
func (s *sim) apply(step Step) int {
	for _, d := range step.Delete {
		terminating(s.pods[Ordinal(set, d.Pod.Name)])
	}
	for _, c := range step.Create {
		s.pods[c.Ordinal] = pod(c.Ordinal, c.Revision, notReady)
	}
	for _, p := range step.Update {
		u := s.pods[Ordinal(set, p.Name)]
		u.Labels[RevisionLabel] = s.in.UpdateRevision
		notReady(u)
	}
	return len(step.Delete) + len(step.Create) + len(step.Update)
}

// settle does the kubelet's part: terminating pods go, the others become Ready. It returns how many changed.
func (s *sim) settle() int {
	n := 0
	for o, p := range s.pods {
		switch {
		case Terminating(p):
			delete(s.pods, o)
			n++
		case !RunningAndReady(p):
			p.Status.Conditions[0].Status = corev1.ConditionTrue
			n++
		}
	}
	return n
}

// render shows each pod as ordinal:revision, with ~ while terminating and * while not Ready.
func (s *sim) render() string {
	var out []string
	for _, n := range s.ordinals() {
		p := s.pods[n]
		mark := ""
		switch {
		case Terminating(p):
			mark = "~"
		case !RunningAndReady(p):
			mark = "*"
		}
		out = append(out, fmt.Sprintf("%d:%s%s", n, strings.TrimPrefix(Revision(p), set+"-"), mark))
	}
	return "[" + strings.Join(out, " ") + "]"
}

func describe(s Step) string {
	var parts []string
	add := func(what string, items []string) {
		if len(items) > 0 {
			parts = append(parts, what+" "+strings.Join(items, ","))
		}
	}
	add("delete", deletions(s.Delete))
	add("create", creations(s.Create))
	add("update", names(s.Update))
	if s.ScaleLimited {
		parts = append(parts, "scale limited")
	}
	if len(parts) == 0 {
		return "wait"
	}
	return strings.Join(parts, "; ")
}

func TestGoldenStories(t *testing.T) {
	for _, tc := range []struct {
		file  string
		title string
		in    Input
		pods  []*corev1.Pod
		then  []func(*Input)
	}{
		{file: "parallel-create", title: "the seed's Parallel set of 5: every pod at once", in: input(5, nil)},
		{file: "ordered-create", title: "OrderedReady: one pod at a time, each Ready before the next", in: input(3, nil, ordered)},
		{file: "maxunavailable-3", title: "the seed's update of 5 pods, maxUnavailable 3", in: input(5, nil, maxUnavailable(3)),
			pods: oldPods(5, nil)},
		{file: "partition-4", title: "the seed's partition 4 of 5, then partition 0", in: input(5, nil, maxUnavailable(3), partition(4)),
			pods: oldPods(5, nil), then: []func(*Input){func(in *Input) { in.Strategy.Partition = 0 }}},
		{file: "ordered-update", title: "OrderedReady update of 3: from the highest ordinal down", in: input(3, nil, ordered),
			pods: oldPods(3, nil)},
		{file: "reserve-ordinals", title: "the seed's reserveOrdinals [1] with 4 replicas, from pods 0-4",
			in: input(4, nil, reserve(intstr.FromInt32(1))), pods: []*corev1.Pod{pod(0, updated), pod(1, updated), pod(2, updated), pod(3, updated), pod(4, updated)}},
		{file: "scale-maxunavailable", title: "the seed's scale-up with scaleStrategy.maxUnavailable 10% of 20", in: input(20, nil, scaleBudget(2))},
		{file: "ordered-scale-down", title: "OrderedReady scale-down from 4 to 1: the highest first, one at a time", in: input(1, nil, ordered),
			pods: []*corev1.Pod{pod(0, updated), pod(1, updated), pod(2, updated), pod(3, updated)}},
		{file: "unordered-priority", title: "unordered update by weight, maxUnavailable 2, partition 1", pods: oldPods(4, map[int32]func(*corev1.Pod){
			0: labelled("tier", "low"), 2: labelled("tier", "low")}),
			in: input(4, nil, maxUnavailable(2), partition(1), unordered(nil), func(s *Strategy) {
				s.Priority = ptr.To(orderByTier())
			})},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s := newSim(tc.in, tc.pods...)
			s.run(t, tc.title)
			for _, change := range tc.then {
				change(&s.in)
				s.run(t, "then")
			}
			compareGolden(t, filepath.Join("testdata", tc.file+".golden"), strings.Join(s.lines, "\n")+"\n")
		})
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run with -update to accept):\n--- want\n%s--- got\n%s", path, want, got)
	}
}
