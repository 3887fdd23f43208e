package plan

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// podOpt shapes a test pod.
type podOpt func(*corev1.Pod)

func rev(r string) podOpt { return func(p *corev1.Pod) { p.Labels[RevisionLabel] = r } }
func readyFor(d time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(-d))}}
	}
}
func createdAgo(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-d)) }
}
func unscheduled(p *corev1.Pod) { p.Spec.NodeName = "" }
func lifecycleState(s kruiseappspub.LifecycleStateType) podOpt {
	return func(p *corev1.Pod) { p.Labels[kruiseappspub.LifecycleStateKey] = string(s) }
}

func pod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{RevisionLabel: "v1"}, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:       corev1.PodSpec{NodeName: "node"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	readyFor(time.Hour)(p)
	for _, o := range opts {
		o(p)
	}
	return p
}

func cloneSet(replicas int32, mutate ...func(*kruiseappsv1alpha1.CloneSetSpec)) *kruiseappsv1alpha1.CloneSet {
	cs := &kruiseappsv1alpha1.CloneSet{Spec: kruiseappsv1alpha1.CloneSetSpec{Replicas: ptr.To(replicas)}}
	for _, m := range mutate {
		m(&cs.Spec)
	}
	return cs
}

func input(cs *kruiseappsv1alpha1.CloneSet, pods ...*corev1.Pod) Input {
	return Input{Now: now, Strategy: Resolve(cs), UpdateRevision: "v2", CurrentRevision: "v1", Pods: pods,
		PodsToDelete: map[string]bool{}}
}

func podNames(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestResolve(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	cases := []struct {
		name string
		cs   *kruiseappsv1alpha1.CloneSet
		want Strategy
	}{
		{name: "defaults", cs: cloneSet(10), want: Strategy{Replicas: 10, ExpectedUpdated: 10, MaxUnavailable: 2,
			Type: kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType}},
		{name: "20% of 3 rounds up to 1", cs: cloneSet(3), want: Strategy{Replicas: 3, ExpectedUpdated: 3, MaxUnavailable: 1,
			Type: kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType}},
		{name: "20% of 6 rounds up to 2 without surge", cs: cloneSet(6), want: Strategy{Replicas: 6, ExpectedUpdated: 6, MaxUnavailable: 2,
			Type: kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType}},
		{name: "20% of 6 rounds down to 1 with surge", cs: cloneSet(6, func(s *kruiseappsv1alpha1.CloneSetSpec) {
			s.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
		}), want: Strategy{Replicas: 6, ExpectedUpdated: 6, MaxUnavailable: 1, MaxSurge: 1,
			Type: kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType}},
		{name: "partition percent rounds up", cs: cloneSet(5, func(s *kruiseappsv1alpha1.CloneSetSpec) {
			s.UpdateStrategy.Partition = pct("50%")
			s.UpdateStrategy.Type = kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		}), want: Strategy{Replicas: 5, Partition: 3, ExpectedUpdated: 2, MaxUnavailable: 1,
			Type: kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType}},
		{name: "surge without unavailability", cs: cloneSet(4, func(s *kruiseappsv1alpha1.CloneSetSpec) {
			s.UpdateStrategy.MaxSurge = pct("25%")
			s.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			s.ScaleStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}), want: Strategy{Replicas: 4, ExpectedUpdated: 4, MaxSurge: 1, ScaleMaxUnavailable: ptr.To[int32](1),
			Type: kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType}},
		{name: "partition above replicas", cs: cloneSet(2, func(s *kruiseappsv1alpha1.CloneSetSpec) {
			s.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(5))
		}), want: Strategy{Replicas: 2, Partition: 2, MaxUnavailable: 1, Type: kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Resolve(tc.cs)
			if got.Replicas != tc.want.Replicas || got.Partition != tc.want.Partition || got.ExpectedUpdated != tc.want.ExpectedUpdated ||
				got.MaxUnavailable != tc.want.MaxUnavailable || got.MaxSurge != tc.want.MaxSurge || got.Type != tc.want.Type ||
				!ptrEqual(got.ScaleMaxUnavailable, tc.want.ScaleMaxUnavailable) {
				t.Fatalf("Resolve = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func ptrEqual(a, b *int32) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func TestPlanScale(t *testing.T) {
	partition := func(n int32) func(*kruiseappsv1alpha1.CloneSetSpec) {
		return func(s *kruiseappsv1alpha1.CloneSetSpec) { s.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(n)) }
	}
	scaleLimit := func(n int32, minReady int32) func(*kruiseappsv1alpha1.CloneSetSpec) {
		return func(s *kruiseappsv1alpha1.CloneSetSpec) {
			s.ScaleStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(n))
			s.MinReadySeconds = minReady
		}
	}
	cases := []struct {
		name       string
		in         Input
		wantDelete []string
		wantCreate []Creation
		limit      *int32
	}{
		{name: "scale up fills the partition with old pods", in: input(cloneSet(4, partition(2)), pod("a", rev("v2"))),
			wantCreate: []Creation{{Revision: "v2"}, {Revision: "v1"}, {Revision: "v1"}}},
		{name: "free ids are reused first", in: func() Input {
			in := input(cloneSet(2), pod("a", rev("v2")))
			in.FreeIDs = []string{"abcde"}
			return in
		}(), wantCreate: []Creation{{ID: "abcde", Revision: "v2"}}},
		{name: "seed: one at a time while the last is not ready for minReadySeconds",
			in:         input(cloneSet(5, scaleLimit(1, 60)), pod("a", rev("v2")), pod("b", rev("v2"), readyFor(30*time.Second))),
			wantCreate: []Creation{}, limit: ptr.To[int32](0)},
		{name: "seed: next pod once the last has been ready 60s",
			in:         input(cloneSet(5, scaleLimit(1, 60)), pod("a", rev("v2")), pod("b", rev("v2"), readyFor(61*time.Second))),
			wantCreate: []Creation{{Revision: "v2"}}, limit: ptr.To[int32](1)},
		{name: "podsToDelete with a replicas decrease deletes exactly the named pod", in: func() Input {
			in := input(cloneSet(2), pod("a", rev("v2")), pod("b", rev("v2")), pod("c", rev("v2")))
			in.PodsToDelete = map[string]bool{"a": true}
			return in
		}(), wantDelete: []string{"a"}},
		{name: "podsToDelete without a decrease replaces the pod", in: func() Input {
			in := input(cloneSet(2), pod("a", rev("v2")), pod("b", rev("v2")))
			in.PodsToDelete = map[string]bool{"b": true}
			return in
		}(), wantDelete: []string{"b"}, wantCreate: []Creation{{Revision: "v2"}}},
		{name: "scale down order: unscheduled, not ready, then newest",
			in: input(cloneSet(1), pod("old", rev("v2"), createdAgo(3*time.Hour)), pod("new", rev("v2"), createdAgo(time.Minute)),
				pod("unsched", rev("v2"), unscheduled), pod("notready", rev("v2"), func(p *corev1.Pod) { p.Status.Conditions = nil })),
			wantDelete: []string{"unsched", "notready", "new"}},
		{name: "scale down removes the revision in excess first",
			in:         input(cloneSet(3, partition(1)), pod("n1", rev("v2")), pod("n2", rev("v2")), pod("o1", rev("v1")), pod("o2", rev("v1"))),
			wantDelete: []string{"o1"}},
		{name: "recreate update surges new pods",
			in: input(cloneSet(2, func(s *kruiseappsv1alpha1.CloneSetSpec) {
				s.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
			}), pod("o1"), pod("o2")),
			wantCreate: []Creation{{Revision: "v2"}}},
		{name: "in-place update surges new pods too",
			in: input(cloneSet(2, func(s *kruiseappsv1alpha1.CloneSetSpec) {
				s.UpdateStrategy.Type = kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
				s.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
			}), pod("o1"), pod("o2")),
			wantCreate: []Creation{{Revision: "v2"}}},
		{name: "blue-green: surge of 2 while the new pods never become available",
			in: input(cloneSet(2, func(s *kruiseappsv1alpha1.CloneSetSpec) {
				s.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(2))
				s.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(0))
				s.MinReadySeconds = 1 << 30
			}), pod("o1"), pod("o2")),
			wantCreate: []Creation{{Revision: "v2"}, {Revision: "v2"}}},
		{name: "blue-green second batch: more new pods beside every old one",
			in: input(cloneSet(4, func(s *kruiseappsv1alpha1.CloneSetSpec) {
				s.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(4))
				s.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(0))
				s.MinReadySeconds = 1 << 30
			}), pod("o1"), pod("o2"), pod("o3"), pod("o4"), pod("n1", rev("v2"), readyFor(time.Minute)), pod("n2", rev("v2"), readyFor(time.Minute))),
			wantCreate: []Creation{{Revision: "v2"}, {Revision: "v2"}}},
		{name: "an old pod stays until the new pods are available",
			in: input(cloneSet(2, func(s *kruiseappsv1alpha1.CloneSetSpec) {
				s.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
				s.MinReadySeconds = 60
			}), pod("o1"), pod("n1", rev("v2")), pod("n2", rev("v2"), readyFor(time.Second)))},
		{name: "surge ends: old pods in excess go once every new pod exists",
			in:         input(cloneSet(2), pod("o1"), pod("n1", rev("v2")), pod("n2", rev("v2"))),
			wantDelete: []string{"o1"}},
		{name: "a new CloneSet does not surge", in: input(cloneSet(2, func(s *kruiseappsv1alpha1.CloneSetSpec) {
			s.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
		})), wantCreate: []Creation{{Revision: "v2"}, {Revision: "v2"}}},
		{name: "no surge for old pods the partition keeps", in: input(cloneSet(2, partition(1), func(s *kruiseappsv1alpha1.CloneSetSpec) {
			s.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
		}), pod("o1"), pod("n1", rev("v2")))},
		{name: "OnDelete does not surge",
			in: input(cloneSet(2, func(s *kruiseappsv1alpha1.CloneSetSpec) {
				s.UpdateStrategy.Type = kruiseappsv1alpha1.OnDeleteCloneSetUpdateStrategyType
				s.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
			}), pod("o1"), pod("o2"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanScale(tc.in)
			if names := podNames(got.Delete); !slices.Equal(names, tc.wantDelete) {
				t.Fatalf("delete = %v, want %v", names, tc.wantDelete)
			}
			if len(got.Create) != len(tc.wantCreate) || (len(got.Create) > 0 && !slices.Equal(got.Create, tc.wantCreate)) {
				t.Fatalf("create = %v, want %v", got.Create, tc.wantCreate)
			}
			if tc.limit != nil && (!got.Limited || got.Limit != *tc.limit) {
				t.Fatalf("limited = %v limit %d, want limit %d", got.Limited, got.Limit, *tc.limit)
			}
		})
	}
}

func TestPlanUpdate(t *testing.T) {
	inPlace := func(s *kruiseappsv1alpha1.CloneSetSpec) {
		s.UpdateStrategy.Type = kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	}
	cases := []struct {
		name string
		in   Input
		want []string
	}{
		{name: "one at a time with 3 replicas", in: input(cloneSet(3, inPlace), pod("a"), pod("b"), pod("c")), want: []string{"a"}},
		{name: "waits while an updated pod is unavailable",
			in: input(cloneSet(3, inPlace), pod("a", rev("v2"), func(p *corev1.Pod) { p.Status.Conditions = nil }), pod("b"), pod("c"))},
		{name: "partition 2 of 4 updates two", in: input(cloneSet(4, inPlace, func(s *kruiseappsv1alpha1.CloneSetSpec) {
			s.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(2))
			s.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
		}), pod("a"), pod("b"), pod("c"), pod("d")), want: []string{"a", "b"}},
		{name: "unavailable pods go first and cost nothing",
			in:   input(cloneSet(3, inPlace), pod("a"), pod("b", func(p *corev1.Pod) { p.Status.Conditions = nil }), pod("c")),
			want: []string{"b"}},
		{name: "preparing update goes first", in: input(cloneSet(3, inPlace), pod("a"), pod("b", lifecycleState(kruiseappspub.LifecycleStatePreparingUpdate)), pod("c")),
			want: []string{"b"}},
		{name: "paused updates nothing", in: input(cloneSet(3, func(s *kruiseappsv1alpha1.CloneSetSpec) { s.UpdateStrategy.Paused = true }), pod("a"))},
		{name: "OnDelete updates nothing", in: input(cloneSet(3, func(s *kruiseappsv1alpha1.CloneSetSpec) {
			s.UpdateStrategy.Type = kruiseappsv1alpha1.OnDeleteCloneSetUpdateStrategyType
		}), pod("a"), pod("b"), pod("c"))},
		{name: "a Ready pod within minReadySeconds still serves", in: input(cloneSet(2, func(s *kruiseappsv1alpha1.CloneSetSpec) {
			s.MinReadySeconds = 1 << 30
			s.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			s.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(1))
		}), pod("a"), pod("b"))},
		{name: "blue-green: no old pod goes while the surge pods are unavailable", in: input(cloneSet(2, func(s *kruiseappsv1alpha1.CloneSetSpec) {
			s.UpdateStrategy.MaxSurge = ptr.To(intstr.FromInt32(2))
			s.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			s.MinReadySeconds = 1 << 30
		}), pod("o1"), pod("o2"), pod("n1", rev("v2"), readyFor(time.Second)), pod("n2", rev("v2"), readyFor(time.Second)))},
		{name: "priority weight picks the heavier pod", in: func() Input {
			in := input(cloneSet(3, inPlace), pod("a"), pod("b", func(p *corev1.Pod) { p.Labels["tier"] = "canary" }), pod("c"))
			in.PriorityStrategy = &kruiseappspub.UpdatePriorityStrategy{WeightPriority: []kruiseappspub.UpdatePriorityWeightTerm{
				{Weight: 50, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}}}}
			return in
		}(), want: []string{"b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := podNames(PlanUpdate(tc.in)); !slices.Equal(got, tc.want) {
				t.Fatalf("update = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCounts(t *testing.T) {
	in := input(cloneSet(3, func(s *kruiseappsv1alpha1.CloneSetSpec) { s.MinReadySeconds = 10 }),
		pod("a", rev("v2")), pod("b", rev("v2"), readyFor(4*time.Second)), pod("c"))
	var st kruiseappsv1alpha1.CloneSetStatus
	requeue := Counts(in, &st)
	want := kruiseappsv1alpha1.CloneSetStatus{Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 2, UpdatedReplicas: 2,
		UpdatedReadyReplicas: 2, UpdatedAvailableReplicas: 1, ExpectedUpdatedReplicas: 3, UpdateRevision: "v2", CurrentRevision: "v1"}
	if st.Replicas != want.Replicas || st.ReadyReplicas != want.ReadyReplicas || st.AvailableReplicas != want.AvailableReplicas ||
		st.UpdatedReplicas != want.UpdatedReplicas || st.UpdatedReadyReplicas != want.UpdatedReadyReplicas ||
		st.UpdatedAvailableReplicas != want.UpdatedAvailableReplicas || st.ExpectedUpdatedReplicas != want.ExpectedUpdatedReplicas ||
		st.UpdateRevision != want.UpdateRevision || st.CurrentRevision != want.CurrentRevision {
		t.Fatalf("status = %+v, want %+v", st, want)
	}
	if requeue != 6*time.Second {
		t.Fatalf("requeue = %v, want 6s", requeue)
	}
	in.Pods = []*corev1.Pod{pod("a", rev("v2")), pod("b", rev("v2")), pod("c", rev("v2"))}
	Counts(in, &st)
	if st.CurrentRevision != "v2" {
		t.Fatalf("current revision = %s once every pod is updated, want v2", st.CurrentRevision)
	}
}
