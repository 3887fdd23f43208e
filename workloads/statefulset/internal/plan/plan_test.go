package plan

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
)

func ordered(s *Strategy)                    { s.Parallel = false }
func maxUnavailable(n int32) func(*Strategy) { return func(s *Strategy) { s.MaxUnavailable = n } }
func partition(n int32) func(*Strategy)      { return func(s *Strategy) { s.Partition = n } }
func scaleBudget(n int32) func(*Strategy) {
	return func(s *Strategy) { s.ScaleMaxUnavailable = ptr.To(n) }
}
func minReady(n int32) func(*Strategy) { return func(s *Strategy) { s.MinReadySeconds = n } }
func unordered(p *kruiseappspub.UpdatePriorityStrategy) func(*Strategy) {
	return func(s *Strategy) { s.Unordered, s.Priority = true, p }
}
func reserve(items ...intstr.IntOrString) func(*Strategy) {
	return func(s *Strategy) { s.Reserved, _ = ParseReserved(items) }
}

// want is a Step as names: deletions "pod:Reason", creations "pod@revision", updates, repairs and resizes.
type want struct {
	del, create, update, repair, resize []string
	limited                             bool
	wait                                time.Duration
	waitingFor                          string
}

func check(t *testing.T, got Step, w want) {
	t.Helper()
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"deletions", deletions(got.Delete), w.del}, {"creations", creations(got.Create), w.create},
		{"updates", names(got.Update), w.update}, {"repairs", names(got.Repair), w.repair}, {"resizes", names(got.Resize), w.resize},
	} {
		if !slices.Equal(c.got, append([]string{}, c.want...)) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if got.ScaleLimited != w.limited || got.Wait != w.wait || got.WaitingFor != w.waitingFor {
		t.Errorf("limited %v wait %v waitingFor %q, want %v %v %q", got.ScaleLimited, got.Wait, got.WaitingFor, w.limited, w.wait, w.waitingFor)
	}
}

func TestPlanScaleUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		want want
	}{
		{name: "parallel creates every missing pod at once", in: input(3, nil),
			want: want{create: []string{"web-0@web-new", "web-1@web-new", "web-2@web-new"}}},
		{name: "ordered creates the first missing pod and waits for it", in: input(3, nil, ordered),
			want: want{create: []string{"web-0@web-new"}, waitingFor: "web-0"}},
		{name: "ordered creates the next pod once the lower ones are available",
			in:   input(3, pods(pod(0, updated), pod(1, updated)), ordered),
			want: want{create: []string{"web-2@web-new"}, waitingFor: "web-2"}},
		{name: "ordered waits for a pod that is not Ready", in: input(3, pods(pod(0, updated, notReady)), ordered),
			want: want{waitingFor: "web-0"}},
		{name: "ordered waits for minReadySeconds", in: input(3, pods(pod(0, updated, readySince(4*time.Second))), ordered, minReady(10)),
			want: want{wait: 6 * time.Second, waitingFor: "web-0"}},
		{name: "scaleStrategy.maxUnavailable creates only as many as it allows", in: input(5, nil, scaleBudget(2)),
			want: want{create: []string{"web-0@web-new", "web-1@web-new"}, limited: true}},
		{name: "unavailable pods spend the scale budget first", in: input(5, pods(pod(0, updated), pod(1, updated, notReady)), scaleBudget(2)),
			want: want{create: []string{"web-2@web-new"}, limited: true}},
		{name: "the scale budget is not limiting when nothing is left to create",
			in:   input(2, pods(pod(0, updated, notReady), pod(1, updated, notReady)), scaleBudget(1)),
			want: want{}},
		{name: "a finished pod is deleted and nothing after it moves", in: input(4, pods(pod(0, updated), pod(1, updated, failed))),
			want: want{del: []string{"web-1:Finished"}}},
		{name: "a finished pod being deleted is waited for", in: input(2, pods(pod(0, updated, failed, terminating))),
			want: want{}},
		{name: "parallel creates around a terminating pod", in: input(3, pods(pod(1, updated, terminating))),
			want: want{create: []string{"web-0@web-new", "web-2@web-new"}}},
		{name: "ordered waits for a terminating pod", in: input(3, pods(pod(0, updated), pod(1, updated, terminating)), ordered),
			want: want{waitingFor: "web-1"}},
		{name: "a pod without its identity labels is repaired",
			in:   input(2, pods(pod(0, updated, labelled(appsv1.PodIndexLabel, "7")), pod(1, updated, labelled(appsv1.StatefulSetPodNameLabel, "x")))),
			want: want{repair: []string{"web-0", "web-1"}}},
		{name: "the seed's reserveOrdinals [1]: pod 1 goes, pod 4 comes",
			in:   input(4, pods(pod(0, updated), pod(1, updated), pod(2, updated), pod(3, updated)), reserve(intstr.FromInt32(1))),
			want: want{create: []string{"web-4@web-new"}, del: []string{"web-1:Condemned"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, Plan(tc.in), tc.want) })
	}
}

func TestPlanNewPodRevisions(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		want want
	}{
		{name: "ordered: the lowest partition slots stay current", in: input(4, pods(pod(0, current), pod(2, updated)), partition(2)),
			want: want{create: []string{"web-1@web-old", "web-3@web-new"}}},
		{name: "ordered: positions count, not ordinals, when ordinals are reserved",
			in:   input(3, nil, partition(2), reserve(intstr.FromInt32(0))),
			want: want{create: []string{"web-1@web-old", "web-2@web-old", "web-3@web-new"}}},
		{name: "unordered: partition counts the pods left on the current revision",
			in:   input(4, pods(pod(0, updated), pod(1, current)), partition(2), unordered(nil)),
			want: want{create: []string{"web-2@web-old", "web-3@web-new"}}},
		{name: "no current revision yet: every pod takes the update revision",
			in:   func() Input { in := input(2, nil, partition(2)); in.CurrentRevision = ""; return in }(),
			want: want{create: []string{"web-0@web-new", "web-1@web-new"}}},
		{name: "OnDelete: new pods take the update revision", in: input(2, nil, partition(2), func(s *Strategy) { s.OnDelete = true }),
			want: want{create: []string{"web-0@web-new", "web-1@web-new"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, Plan(tc.in), tc.want) })
	}
}

func TestPlanScaleDown(t *testing.T) {
	four := func(changes ...map[int32]func(*corev1.Pod)) []*corev1.Pod {
		var out []*corev1.Pod
		for n := range int32(4) {
			var cs []func(*corev1.Pod)
			for _, m := range changes {
				if c, ok := m[n]; ok {
					cs = append(cs, c)
				}
			}
			out = append(out, pod(n, updated, cs...))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   Input
		want want
	}{
		{name: "parallel deletes every pod past the replicas, highest first", in: input(2, four()),
			want: want{del: []string{"web-3:Condemned", "web-2:Condemned"}}},
		{name: "ordered deletes one, the highest", in: input(2, four(), ordered),
			want: want{del: []string{"web-3:Condemned"}}},
		{name: "ordered waits for the highest to be deleted", in: input(2, four(map[int32]func(*corev1.Pod){3: terminating}), ordered),
			want: want{waitingFor: "web-3"}},
		{name: "ordered deletes the lowest unhealthy pod at once",
			in:   input(2, four(map[int32]func(*corev1.Pod){3: notReady}), ordered),
			want: want{del: []string{"web-3:Condemned"}}},
		{name: "ordered waits while a higher pod is unhealthy and not the first",
			in:   input(1, four(map[int32]func(*corev1.Pod){2: notReady, 3: notReady}), ordered),
			want: want{waitingFor: "web-3"}},
		{name: "parallel skips terminating pods", in: input(2, four(map[int32]func(*corev1.Pod){3: terminating})),
			want: want{del: []string{"web-2:Condemned"}}},
		{name: "pods below a raised ordinals.start are condemned too",
			in:   input(2, four(), func(s *Strategy) { s.Start = 2 }),
			want: want{del: []string{"web-1:Condemned", "web-0:Condemned"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, Plan(tc.in), tc.want) })
	}
}

func oldPods(n int32, changes map[int32]func(*corev1.Pod)) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		if c, ok := changes[i]; ok {
			out = append(out, pod(i, current, c))
		} else {
			out = append(out, pod(i, current))
		}
	}
	return out
}

func TestPlanUpdate(t *testing.T) {
	weights := &kruiseappspub.UpdatePriorityStrategy{WeightPriority: []kruiseappspub.UpdatePriorityWeightTerm{
		{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "low"}}},
	}}
	updating := func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: kruiseappspub.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	}
	for _, tc := range []struct {
		name string
		in   Input
		want want
	}{
		{name: "the seed: maxUnavailable 3 updates three at once, highest first", in: input(5, oldPods(5, nil), maxUnavailable(3)),
			want: want{update: []string{"web-4", "web-3", "web-2"}}},
		{name: "the seed: partition 4 of 5 updates one", in: input(5, oldPods(5, nil), maxUnavailable(3), partition(4)),
			want: want{update: []string{"web-4"}}},
		{name: "ordered updates the highest pod only", in: input(3, oldPods(3, nil), ordered),
			want: want{update: []string{"web-2"}}},
		{name: "ordered waits for an unhealthy pod before anything", in: input(3, oldPods(3, map[int32]func(*corev1.Pod){0: notReady}), ordered),
			want: want{waitingFor: "web-0"}},
		{name: "paused updates nothing", in: input(3, oldPods(3, nil), func(s *Strategy) { s.Paused = true })},
		{name: "OnDelete updates nothing", in: input(3, oldPods(3, nil), func(s *Strategy) { s.OnDelete = true })},
		{name: "an unavailable pod counts against maxUnavailable",
			in:   input(5, oldPods(5, map[int32]func(*corev1.Pod){1: notReady}), maxUnavailable(2)),
			want: want{update: []string{"web-4"}}},
		{name: "an in-place update that has not finished counts against maxUnavailable",
			in:   input(3, append(oldPods(2, nil), pod(2, updated, updating)), maxUnavailable(1)),
			want: want{}},
		{name: "a missing pod counts against maxUnavailable", in: input(3, oldPods(2, nil), partition(3)),
			want: want{create: []string{"web-2@web-old"}}},
		{name: "minReadySeconds keeps a fresh pod unavailable",
			in:   input(3, append(oldPods(2, nil), pod(2, updated, readySince(time.Second))), minReady(5)),
			want: want{wait: 4 * time.Second}},
		{name: "unordered goes by priority", in: input(4, oldPods(4, map[int32]func(*corev1.Pod){1: labelled("tier", "low")}),
			maxUnavailable(2), unordered(weights)),
			want: want{update: []string{"web-1", "web-3"}}},
		{name: "unordered: updated pods count against the partition",
			in:   input(4, append(oldPods(3, nil), pod(3, updated)), maxUnavailable(4), partition(2), unordered(nil)),
			want: want{update: []string{"web-2"}}},
		{name: "a pod labelled for deletion is deleted whatever the partition",
			in:   input(3, oldPods(3, map[int32]func(*corev1.Pod){0: specifiedDelete}), partition(3)),
			want: want{del: []string{"web-0:Specified"}}},
		{name: "a pod labelled for deletion waits for maxUnavailable",
			in:   input(3, oldPods(3, map[int32]func(*corev1.Pod){0: specifiedDelete, 1: notReady}), partition(3)),
			want: want{}},
		{name: "a pod preparing deletion is unavailable", in: input(3, oldPods(3, map[int32]func(*corev1.Pod){2: state(kruiseappspub.LifecycleStatePreparingDelete)})),
			want: want{update: []string{"web-2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, Plan(tc.in), tc.want) })
	}
}

func TestPlanClaimResize(t *testing.T) {
	in := input(3, pods(pod(0, updated), pod(1, current), pod(2, updated)), maxUnavailable(3))
	in.Claims = map[int32]ClaimState{
		0: {Compatible: true, Ready: true, Completed: true},
		1: {Compatible: true, Completed: true},
		2: {},
	}
	check(t, Plan(in), want{resize: []string{"web-2"}, update: []string{"web-1"}})
	in.Claims[1] = ClaimState{Compatible: true}
	check(t, Plan(in), want{resize: []string{"web-2"}})
}

func orderByTier() kruiseappspub.UpdatePriorityStrategy {
	return kruiseappspub.UpdatePriorityStrategy{WeightPriority: []kruiseappspub.UpdatePriorityWeightTerm{
		{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "low"}}},
	}}
}
