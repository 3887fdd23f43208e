package deployment

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
)

// rs is a ReplicaSet running every pod, ready and available, with annotations for the given replicas.
func rs(name string, replicas, deploymentReplicas int32) ReplicaSetState {
	return ReplicaSetState{
		Name: name, Replicas: replicas, Running: replicas, Ready: replicas, Available: replicas,
		DesiredReplicas: ptr.To(deploymentReplicas), MaxReplicas: ptr.To(deploymentReplicas),
	}
}

// running is s still running n pods: it was scaled down and its controller has not deleted them yet.
func running(s ReplicaSetState, n int32) ReplicaSetState {
	s.Running = n
	return s
}

func unavailable(s ReplicaSetState, available int32) ReplicaSetState {
	s.Ready, s.Available = available, available
	return s
}

func strategy(partition intstr.IntOrString) rolloutsv1beta1.DeploymentStrategy {
	return rolloutsv1beta1.DeploymentStrategy{RollingStyle: rolloutsv1beta1.PartitionRollingStyle, Partition: partition}
}

func withRolling(s rolloutsv1beta1.DeploymentStrategy, surge, unavailable intstr.IntOrString) rolloutsv1beta1.DeploymentStrategy {
	s.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}
	return s
}

func up(name string, from, to int32) Step    { return Step{Name: name, From: from, To: to} }
func upNew(name string, from, to int32) Step { return Step{Name: name, New: true, From: from, To: to} }
func create(to int32) Step                   { return Step{New: true, Create: true, To: to} }

func TestCompute(t *testing.T) {
	num, pct := intstr.FromInt32, intstr.FromString
	paused := strategy(num(5))
	paused.Paused = true
	tests := []struct {
		name       string
		in         Input
		want       []Step
		wantStatus rolloutsv1beta1.DeploymentExtraStatus
	}{{
		name: "first batch of 1 out of 10 creates the new set and surges first",
		in:   Input{Replicas: 10, Strategy: strategy(num(1)), Old: []ReplicaSetState{rs("v1", 10, 10)}},
		want: []Step{create(1), up("v1", 10, 9)}, wantStatus: status(0, 1),
	}, {
		name: "an aborted release shrinks the new set to the partition and grows the old one back",
		in: Input{Replicas: 4, Strategy: strategy(num(0)), Aborted: true,
			New: ptr.To(rs("v2", 2, 4)), Old: []ReplicaSetState{rs("v1", 2, 4)}},
		// At once: the aborted version's pods are the ones failing their analysis.
		want: []Step{{Name: "v2", New: true, From: 2, To: 0}, up("v1", 2, 4)}, wantStatus: status(2, 0),
	}, {
		name: "first batch waits for its pod",
		in: Input{Replicas: 10, Strategy: strategy(num(1)),
			New: ptr.To(unavailable(rs("v2", 1, 10), 0)), Old: []ReplicaSetState{rs("v1", 9, 10)}},
		wantStatus: status(0, 1),
	}, {
		name: "50% grows the new set into the surge and shrinks the old set within maxUnavailable",
		in: Input{Replicas: 10, Strategy: strategy(pct("50%")),
			New: ptr.To(rs("v2", 1, 10)), Old: []ReplicaSetState{rs("v1", 9, 10)}},
		want: []Step{upNew("v2", 1, 4), up("v1", 9, 7)}, wantStatus: status(1, 5),
	}, {
		name: "the room the old set freed is taken once its pods are gone",
		in: Input{Replicas: 10, Strategy: strategy(pct("50%")),
			New: ptr.To(unavailable(rs("v2", 4, 10), 1)), Old: []ReplicaSetState{rs("v1", 7, 10)}},
		want: []Step{upNew("v2", 4, 5)}, wantStatus: status(1, 5),
	}, {
		name: "the room of old pods still running is not taken: their deletion and new pods would race past maxSurge",
		in: Input{Replicas: 10, Strategy: strategy(pct("50%")),
			New: ptr.To(unavailable(rs("v2", 4, 10), 1)), Old: []ReplicaSetState{running(rs("v1", 7, 10), 9)}},
		wantStatus: status(1, 5),
	}, {
		name: "100% moves everything",
		in: Input{Replicas: 10, Strategy: strategy(pct("100%")),
			New: ptr.To(rs("v2", 5, 10)), Old: []ReplicaSetState{rs("v1", 5, 10)}},
		want: []Step{upNew("v2", 5, 8), up("v1", 5, 3)}, wantStatus: status(5, 10),
	}, {
		name: "100% removes the last old pods once the new ones are available",
		in: Input{Replicas: 10, Strategy: strategy(pct("100%")),
			New: ptr.To(rs("v2", 10, 10)), Old: []ReplicaSetState{rs("v1", 3, 10)}},
		want: []Step{up("v1", 3, 0)}, wantStatus: status(10, 10),
	}, {
		name: "with the new set complete, old pods go a quarter of maxUnavailable at a time, not pod by pod",
		in: Input{Replicas: 100, Strategy: strategy(pct("100%")),
			New: ptr.To(unavailable(rs("v2", 100, 100), 49)), Old: []ReplicaSetState{rs("v1", 30, 100)}},
		wantStatus: status(49, 100),
	}, {
		name: "with the new set complete, a quarter of maxUnavailable free shrinks the old one",
		in: Input{Replicas: 100, Strategy: strategy(pct("100%")),
			New: ptr.To(unavailable(rs("v2", 100, 100), 57)), Old: []ReplicaSetState{rs("v1", 30, 100)}},
		want: []Step{up("v1", 30, 18)}, wantStatus: status(57, 100),
	}, {
		name: "with the new set complete, the last old pods go together as soon as they may",
		in: Input{Replicas: 100, Strategy: strategy(pct("100%")),
			New: ptr.To(unavailable(rs("v2", 100, 100), 75)), Old: []ReplicaSetState{rs("v1", 4, 100)}},
		want: []Step{up("v1", 4, 0)}, wantStatus: status(75, 100),
	}, {
		name: "a new set still growing frees room as it opens, pod by pod",
		in: Input{Replicas: 100, Strategy: withRolling(strategy(pct("100%")), num(0), num(25)),
			New: ptr.To(unavailable(rs("v2", 70, 100), 46)), Old: []ReplicaSetState{rs("v1", 30, 100)}},
		want: []Step{up("v1", 30, 29)}, wantStatus: status(46, 100),
	}, {
		name: "a percentage below 100% keeps one old pod",
		in: Input{Replicas: 10, Strategy: strategy(pct("99%")),
			New: ptr.To(rs("v2", 9, 10)), Old: []ReplicaSetState{rs("v1", 1, 10)}},
		wantStatus: status(9, 9),
	}, {
		name: "maxSurge 0 and maxUnavailable 0 resolve to maxUnavailable 1",
		in: Input{Replicas: 10, Strategy: withRolling(strategy(num(2)), num(0), num(0)),
			New: ptr.To(rs("v2", 1, 10)), Old: []ReplicaSetState{rs("v1", 9, 10)}},
		want: []Step{up("v1", 9, 8)}, wantStatus: status(1, 2),
	}, {
		name: "maxSurge 0: the first new pod surges by one, a lone old set never shrinks first",
		in: Input{Replicas: 10, Strategy: withRolling(strategy(num(2)), num(0), num(1)),
			Old: []ReplicaSetState{rs("v1", 10, 10), rs("v0", 0, 10)}},
		want: []Step{create(1), up("v1", 10, 9)}, wantStatus: status(0, 2),
	}, {
		name: "maxSurge 0 with two active old sets shrinks first",
		in: Input{Replicas: 10, Strategy: withRolling(strategy(num(2)), num(0), num(1)),
			Old: []ReplicaSetState{rs("v0", 2, 10), rs("v1", 8, 10)}},
		want: []Step{create(0), up("v0", 2, 1)}, wantStatus: status(0, 2),
	}, {
		name: "maxUnavailable 0 only surges until new pods are available",
		in: Input{Replicas: 10, Strategy: withRolling(strategy(num(3)), num(1), num(0)),
			Old: []ReplicaSetState{rs("v1", 10, 10)}},
		want: []Step{create(1)}, wantStatus: status(0, 3),
	}, {
		name: "maxSurge 0 shrinks first, and grows into the freed room on the next pass",
		in: Input{Replicas: 10, Strategy: withRolling(strategy(num(5)), num(0), num(2)),
			New: ptr.To(rs("v2", 1, 10)), Old: []ReplicaSetState{rs("v1", 9, 10)}},
		want: []Step{up("v1", 9, 7)}, wantStatus: status(1, 5),
	}, {
		name: "unavailable old pods go first, even from a newer set",
		in: Input{Replicas: 10, Strategy: strategy(num(3)), New: ptr.To(rs("v3", 0, 10)),
			Old: []ReplicaSetState{rs("v1", 6, 10), unavailable(rs("v2", 4, 10), 2)}},
		want: []Step{upNew("v3", 0, 3), up("v2", 4, 2)}, wantStatus: status(0, 3),
	}, {
		name: "available old pods go oldest set first",
		in: Input{Replicas: 10, Strategy: strategy(num(2)), New: ptr.To(rs("v3", 0, 10)),
			Old: []ReplicaSetState{rs("v1", 3, 10), rs("v2", 7, 10)}},
		want: []Step{upNew("v3", 0, 2), up("v1", 3, 1)}, wantStatus: status(0, 2),
	}, {
		name: "new pods that never become available stop the old set from shrinking",
		in: Input{Replicas: 10, Strategy: strategy(num(5)),
			New: ptr.To(unavailable(rs("v2", 3, 10), 0)), Old: []ReplicaSetState{rs("v1", 8, 10)}},
		want: []Step{upNew("v2", 3, 5)}, wantStatus: status(0, 5),
	}, {
		name: "scale up mid-release reapplies a percentage and grows the old set back",
		in: Input{Replicas: 20, Strategy: strategy(pct("50%")),
			New: ptr.To(rs("v2", 5, 10)), Old: []ReplicaSetState{rs("v1", 5, 10)}},
		want: []Step{upNew("v2", 5, 10), up("v1", 5, 10)}, wantStatus: status(5, 10),
	}, {
		name: "scale up mid-release scales both sets in proportion, an absolute partition too",
		in: Input{Replicas: 20, Strategy: strategy(num(2)),
			New: ptr.To(rs("v2", 2, 10)), Old: []ReplicaSetState{rs("v1", 8, 10)}},
		want: []Step{upNew("v2", 2, 4), up("v1", 8, 16)}, wantStatus: status(2, 2),
	}, {
		name: "upstream's case: 2 new and 3 old scaled from 5 to 10 become 4 and 6",
		in: Input{Replicas: 10, Strategy: strategy(num(2)),
			New: ptr.To(rs("v2", 2, 5)), Old: []ReplicaSetState{rs("v1", 3, 5)}},
		want: []Step{upNew("v2", 2, 4), up("v1", 3, 6)}, wantStatus: status(2, 2),
	}, {
		name: "proportions round to the nearest pod",
		in: Input{Replicas: 7, Strategy: strategy(num(2)),
			New: ptr.To(rs("v2", 2, 5)), Old: []ReplicaSetState{rs("v1", 3, 5)}},
		want: []Step{upNew("v2", 2, 3), up("v1", 3, 4)}, wantStatus: status(2, 2),
	}, {
		name: "scale down mid-release keeps the partition's share",
		in: Input{Replicas: 4, Strategy: strategy(pct("50%")),
			New: ptr.To(rs("v2", 5, 10)), Old: []ReplicaSetState{rs("v1", 5, 10)}},
		want: []Step{upNew("v2", 5, 2), up("v1", 5, 2)}, wantStatus: status(5, 2),
	}, {
		name: "scale down mid-release with an absolute partition shrinks the old set",
		in: Input{Replicas: 5, Strategy: strategy(num(1)),
			New: ptr.To(rs("v2", 1, 10)), Old: []ReplicaSetState{rs("v1", 9, 10)}},
		want: []Step{up("v1", 9, 4), upNew("v2", 1, 1)}, wantStatus: status(1, 1),
	}, {
		name: "a lowered partition never shrinks the new set",
		in: Input{Replicas: 10, Strategy: strategy(num(2)),
			New: ptr.To(rs("v2", 5, 10)), Old: []ReplicaSetState{rs("v1", 5, 10)}},
		wantStatus: status(5, 2),
	}, {
		name: "template back to an old set: that set is the new one and keeps its pods",
		in: Input{Replicas: 10, Strategy: strategy(num(0)),
			New: ptr.To(rs("v1", 9, 10)), Old: []ReplicaSetState{rs("v2", 1, 10)}},
		wantStatus: status(9, 0),
	}, {
		name: "template back to an old set: raising the partition removes the abandoned revision",
		in: Input{Replicas: 10, Strategy: strategy(pct("100%")),
			New: ptr.To(rs("v1", 9, 10)), Old: []ReplicaSetState{rs("v2", 1, 10)}},
		want: []Step{upNew("v1", 9, 10), up("v2", 1, 0)}, wantStatus: status(9, 10),
	}, {
		name: "paused strategy holds the new set",
		in: Input{Replicas: 10, Strategy: paused,
			New: ptr.To(rs("v2", 1, 10)), Old: []ReplicaSetState{rs("v1", 9, 10)}},
		wantStatus: status(1, 5),
	}, {
		name: "without old sets the new set takes every pod",
		in:   Input{Replicas: 3, Strategy: strategy(num(1))},
		want: []Step{create(3)}, wantStatus: status(0, 1),
	}, {
		name: "stale replica annotations of active sets are rewritten",
		in: Input{Replicas: 10, Strategy: strategy(num(1)),
			New: ptr.To(ReplicaSetState{Name: "v2", Replicas: 1, Ready: 1, Available: 1}),
			Old: []ReplicaSetState{{Name: "v1", Replicas: 9, Available: 9, DesiredReplicas: ptr.To[int32](10), MaxReplicas: ptr.To[int32](13)},
				{Name: "v0", DesiredReplicas: ptr.To[int32](3)}}},
		want: []Step{upNew("v2", 1, 1), up("v1", 9, 9)}, wantStatus: status(1, 1),
	}, {
		name: "zero replicas empties every set",
		in: Input{Replicas: 0, Strategy: strategy(num(1)),
			New: ptr.To(rs("v2", 1, 10)), Old: []ReplicaSetState{rs("v1", 9, 10)}},
		want: []Step{upNew("v2", 1, 0), up("v1", 9, 0)}, wantStatus: status(1, 0),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compute(tt.in)
			if err != nil {
				t.Fatalf("Compute() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Steps); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStatus, got.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if got.DesiredReplicas != tt.in.Replicas || got.MaxReplicas != tt.in.Replicas {
				t.Errorf("replica annotations = %d/%d, want %d", got.DesiredReplicas, got.MaxReplicas, tt.in.Replicas)
			}
		})
	}
}

func status(ready, expected int32) rolloutsv1beta1.DeploymentExtraStatus {
	return rolloutsv1beta1.DeploymentExtraStatus{UpdatedReadyReplicas: ready, ExpectedUpdatedReplicas: expected}
}

func TestComputeRejectsMalformedStrategy(t *testing.T) {
	bad := intstr.FromString("half")
	tests := []struct {
		name     string
		strategy rolloutsv1beta1.DeploymentStrategy
	}{
		{name: "partition", strategy: strategy(bad)},
		{name: "maxSurge", strategy: withRolling(strategy(intstr.FromInt32(1)), bad, intstr.FromInt32(1))},
		{name: "maxUnavailable", strategy: withRolling(strategy(intstr.FromInt32(1)), intstr.FromInt32(1), bad)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compute(Input{Replicas: 10, Strategy: tt.strategy, Old: []ReplicaSetState{rs("v1", 10, 10)}})
			if err == nil || !strings.Contains(err.Error(), rolloutsv1beta1.DeploymentStrategyAnnotation) {
				t.Errorf("Compute() error = %v, want one naming the annotation", err)
			}
		})
	}
}

func TestResolveFenceposts(t *testing.T) {
	num, pct := intstr.FromInt32, intstr.FromString
	tests := []struct {
		name                  string
		ru                    *appsv1.RollingUpdateDeployment
		replicas              int32
		wantSurge, wantUnavai int32
	}{
		{name: "defaults 25%", replicas: 10, wantSurge: 3, wantUnavai: 2},
		{name: "defaults on one pod", replicas: 1, wantSurge: 1, wantUnavai: 0},
		{name: "both zero", ru: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(num(0)), MaxUnavailable: ptr.To(num(0))}, replicas: 10, wantUnavai: 1},
		{name: "both round to zero", ru: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(pct("0%")), MaxUnavailable: ptr.To(pct("5%"))}, replicas: 10, wantUnavai: 1},
		{name: "capped at replicas", ru: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(num(50)), MaxUnavailable: ptr.To(pct("300%"))}, replicas: 4, wantSurge: 4, wantUnavai: 4},
		{name: "negative is zero", ru: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(num(-3)), MaxUnavailable: ptr.To(num(2))}, replicas: 4, wantUnavai: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			surge, unavailable, err := ResolveFenceposts(tt.ru, tt.replicas)
			if err != nil || surge != tt.wantSurge || unavailable != tt.wantUnavai {
				t.Errorf("ResolveFenceposts() = %d, %d, %v; want %d, %d", surge, unavailable, err, tt.wantSurge, tt.wantUnavai)
			}
		})
	}
}

// TestComputeConverges runs whole releases: each round applies the plan one step at a time, checking
// the surge and availability limits after every step, then lets every pod become available.
func TestComputeConverges(t *testing.T) {
	num, pct := intstr.FromInt32, intstr.FromString
	rollings := []*appsv1.RollingUpdateDeployment{
		nil,
		{MaxSurge: ptr.To(num(0)), MaxUnavailable: ptr.To(num(1))},
		{MaxSurge: ptr.To(num(1)), MaxUnavailable: ptr.To(num(0))},
		{MaxSurge: ptr.To(num(0)), MaxUnavailable: ptr.To(num(0))},
		{MaxSurge: ptr.To(pct("50%")), MaxUnavailable: ptr.To(num(0))},
		{MaxSurge: ptr.To(num(2)), MaxUnavailable: ptr.To(num(3))},
	}
	partitions := []intstr.IntOrString{num(0), num(1), pct("30%"), pct("50%"), num(7), pct("100%")}
	for _, replicas := range []int32{1, 2, 3, 5, 10, 13} {
		for i, ru := range rollings {
			t.Run(fmt.Sprintf("replicas %d rolling %d", replicas, i), func(t *testing.T) {
				sim := &simulation{t: t, replicas: replicas, rolling: ru, old: []ReplicaSetState{rs("v1", replicas, replicas)}}
				for _, p := range partitions {
					sim.release(p, true)
				}
			})
		}
	}
}

// TestComputeHoldsAvailabilityWhenNewPodsFail runs a release whose new pods never become available.
func TestComputeHoldsAvailabilityWhenNewPodsFail(t *testing.T) {
	for _, replicas := range []int32{1, 4, 10} {
		sim := &simulation{t: t, replicas: replicas, old: []ReplicaSetState{rs("v1", replicas, replicas)}}
		sim.release(intstr.FromString("100%"), false)
	}
}

type simulation struct {
	t        *testing.T
	replicas int32
	rolling  *appsv1.RollingUpdateDeployment
	new      *ReplicaSetState
	old      []ReplicaSetState
}

func (s *simulation) release(p intstr.IntOrString, newPodsBecomeAvailable bool) {
	s.t.Helper()
	in := Input{Replicas: s.replicas, Strategy: strategy(p)}
	in.Strategy.RollingUpdate = s.rolling
	surge, unavailable, _ := ResolveFenceposts(s.rolling, s.replicas)
	for round := 0; round < 100; round++ {
		in.New, in.Old = s.new, s.old
		plan, err := Compute(in)
		if err != nil {
			s.t.Fatalf("Compute() error = %v", err)
		}
		if len(plan.Steps) == 0 {
			s.checkDone(plan, newPodsBecomeAvailable)
			return
		}
		extra := s.firstPodSurge(surge)
		for _, step := range plan.Steps {
			s.apply(step, plan.DesiredReplicas)
			s.checkLimits(step, s.replicas+surge+extra, s.replicas-unavailable)
		}
		s.settle(newPodsBecomeAvailable)
	}
	s.t.Fatalf("partition %s: no convergence in 100 rounds", p.String())
}

// firstPodSurge is the one pod a release without surge may run over replicas while its first new pod
// starts beside a lone old ReplicaSet.
func (s *simulation) firstPodSurge(surge int32) int32 {
	active := 0
	for _, rs := range s.old {
		if rs.Replicas > 0 {
			active++
		}
	}
	if surge > 0 || active != 1 || (s.new != nil && s.new.Replicas > 0) {
		return 0
	}
	return 1
}

func (s *simulation) apply(step Step, desired int32) {
	target := s.new
	if !step.New {
		for i := range s.old {
			if s.old[i].Name == step.Name {
				target = &s.old[i]
			}
		}
	} else if step.Create {
		s.new = &ReplicaSetState{Name: "v2"}
		target = s.new
	}
	if target == nil || target.Replicas != step.From {
		s.t.Fatalf("step %+v does not match the state %+v", step, target)
	}
	target.Replicas = step.To
	// The worst case for the pod count: a ReplicaSet's controller creates pods at once and deletes them
	// only later (settle).
	target.Running = max(target.Running, step.To)
	target.Available, target.Ready = min(target.Available, step.To), min(target.Ready, step.To)
	target.DesiredReplicas, target.MaxReplicas = ptr.To(desired), ptr.To(desired)
}

func (s *simulation) all() []*ReplicaSetState {
	all := []*ReplicaSetState{}
	if s.new != nil {
		all = append(all, s.new)
	}
	for i := range s.old {
		all = append(all, &s.old[i])
	}
	return all
}

func (s *simulation) checkLimits(step Step, maxTotal, minAvailable int32) {
	var total, available int32
	for _, rs := range s.all() {
		total, available = total+max(rs.Replicas, rs.Running), available+rs.Available
	}
	if total > maxTotal || available < minAvailable {
		s.t.Fatalf("after %+v: %d pods (max %d), %d available (min %d)", step, total, maxTotal, available, minAvailable)
	}
}

func (s *simulation) settle(newPodsBecomeAvailable bool) {
	for _, rs := range s.all() {
		rs.Running = rs.Replicas
		if rs != s.new || newPodsBecomeAvailable {
			rs.Available, rs.Ready = rs.Replicas, rs.Replicas
		}
	}
}

func (s *simulation) checkDone(plan Plan, newPodsBecomeAvailable bool) {
	if !newPodsBecomeAvailable {
		return
	}
	var old int32
	for _, rs := range s.old {
		old += rs.Replicas
	}
	target := plan.Status.ExpectedUpdatedReplicas
	if s.new == nil || s.new.Replicas != target || old != s.replicas-target {
		s.t.Fatalf("settled at new %+v, old %d; want %d new and %d old", s.new, old, target, s.replicas-target)
	}
}

func withMaxReplicas(s ReplicaSetState, n int32) ReplicaSetState {
	s.MaxReplicas = ptr.To(n)
	return s
}

func TestComputeStamps(t *testing.T) {
	b1, b2 := control.BatchPodLabels("v2", 0), control.BatchPodLabels("v2", 1)
	stamped := func(s ReplicaSetState, labels map[string]string, settled bool) *ReplicaSetState {
		s.Stamped, s.Settled = labels, settled
		return &s
	}
	relabel := func(s Step, labels map[string]string) Step {
		s.Relabel, s.Labels = true, labels
		return s
	}
	old := func(n int32) []ReplicaSetState { return []ReplicaSetState{rs("v1", n, 10)} }
	tests := []struct {
		name string
		in   Input
		want []Step
	}{{
		name: "the new set is created stamped",
		in:   Input{Replicas: 10, Strategy: strategy(intstr.FromInt32(1)), Old: old(10), PodLabels: b1},
		want: []Step{relabel(create(1), b1), up("v1", 10, 9)},
	}, {
		name: "growing again with the same labels writes no stamps",
		in: Input{Replicas: 10, Strategy: strategy(intstr.FromInt32(3)), Old: old(9), PodLabels: b1,
			New: stamped(rs("v2", 1, 10), b1, false)},
		want: []Step{upNew("v2", 1, 3), up("v1", 9, 7)},
	}, {
		name: "the next batch restamps as it grows",
		in: Input{Replicas: 10, Strategy: strategy(intstr.FromInt32(3)), Old: old(9), PodLabels: b2,
			New: stamped(rs("v2", 1, 10), b1, true)},
		want: []Step{relabel(upNew("v2", 1, 3), b2), up("v1", 9, 7)},
	}, {
		name: "an unstamped set is stamped as it grows",
		in: Input{Replicas: 10, Strategy: strategy(intstr.FromInt32(3)), Old: old(9), PodLabels: b2,
			New: ptr.To(rs("v2", 1, 10))},
		want: []Step{relabel(upNew("v2", 1, 3), b2), up("v1", 9, 7)},
	}, {
		name: "stamps stay while pods are still to be created",
		in: Input{Replicas: 10, Strategy: strategy(intstr.FromInt32(3)), Old: old(7), PodLabels: b2,
			New: stamped(rs("v2", 3, 10), b2, false)},
	}, {
		name: "stamps go once every pod exists",
		in: Input{Replicas: 10, Strategy: strategy(intstr.FromInt32(3)), Old: old(7), PodLabels: b2,
			New: stamped(rs("v2", 3, 10), b2, true)},
		want: []Step{relabel(upNew("v2", 3, 3), nil)},
	}, {
		name: "stamps go with the set's annotation write",
		in: Input{Replicas: 10, Strategy: strategy(intstr.FromInt32(3)), Old: old(7), PodLabels: b2,
			New: stamped(withMaxReplicas(rs("v2", 3, 10), 13), b2, true)},
		want: []Step{relabel(upNew("v2", 3, 3), nil)},
	}, {
		name: "without pod labels a growing set loses its stamps",
		in: Input{Replicas: 10, Strategy: strategy(intstr.FromInt32(3)), Old: old(9),
			New: stamped(rs("v2", 1, 10), b1, false)},
		want: []Step{relabel(upNew("v2", 1, 3), nil), up("v1", 9, 7)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compute(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Steps); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}
