package deployment

import "slices"

// sizes are the spec.replicas of the ReplicaSets as one phase of the plan leaves them, with the
// running and available pods they report (which the plan does not change).
type sizes struct {
	new          int32
	old          []int32
	newAvailable int32
	oldRunning   []int32
	oldAvailable []int32
}

func newSizes(in Input) sizes {
	n := len(in.Old)
	s := sizes{old: make([]int32, n), oldRunning: make([]int32, n), oldAvailable: make([]int32, n)}
	if in.New != nil {
		s.new, s.newAvailable = max(in.New.Replicas, 0), max(in.New.Available, 0)
	}
	for i, rs := range in.Old {
		s.old[i], s.oldRunning[i], s.oldAvailable[i] = max(rs.Replicas, 0), max(rs.Running, 0), max(rs.Available, 0)
	}
	return s
}

func (s sizes) clone() sizes {
	s.old = slices.Clone(s.old)
	return s
}

func (s sizes) oldTotal() int32 {
	var t int32
	for _, n := range s.old {
		t += n
	}
	return t
}

func (s sizes) total() int32 {
	return s.new + s.oldTotal()
}

// occupied counts the pods that are or will be: an old ReplicaSet scaled down may still run the pods it
// is about to delete, and until its status shows them gone, growing into their room would briefly run
// more pods than maxSurge allows (its controller and the new one's act at the same time).
func (s sizes) occupied() int32 {
	t := s.new
	for i, n := range s.old {
		t += max(n, s.oldRunning[i])
	}
	return t
}

// available counts the available pods, never more than a ReplicaSet's size: a ReplicaSet just scaled
// down may still report the pods it is removing.
func (s sizes) available() int32 {
	t := min(s.newAvailable, s.new)
	for i, n := range s.old {
		t += min(s.oldAvailable[i], n)
	}
	return t
}

// capNew shrinks a new ReplicaSet above its goal at once. That only follows a scale-down of the
// Deployment, which kube-controller-manager applies directly too.
func (s *sizes) capNew(lim limits) {
	s.new = min(s.new, lim.newGoal)
}

// scaleUpNew grows the new ReplicaSet toward its goal within the room maxSurge (plus extra) leaves.
func (s *sizes) scaleUpNew(lim limits, extra int32) {
	if up := min(lim.maxTotal+extra-s.occupied(), lim.newGoal-s.new); up > 0 {
		s.new += up
	}
}

// scaleDownOld shrinks the old ReplicaSets toward the pods the partition leaves them, as far as
// maxUnavailable allows: first their unavailable pods, then available ones, oldest ReplicaSet first.
// New pods that are not available yet count against the budget, so that a failing new revision never
// lets the old one shrink (the rule kube-controller-manager uses).
func (s *sizes) scaleDownOld(lim limits) {
	excess := s.oldTotal() - (lim.replicas - lim.newGoal)
	newUnavailable := s.new - min(s.newAvailable, s.new)
	budget := min(excess, s.total()-lim.minAvailable-newUnavailable)
	for i := range s.old {
		down := min(budget, s.old[i]-min(s.oldAvailable[i], s.old[i]))
		if down > 0 {
			s.old[i] -= down
			budget -= down
			excess -= down
		}
	}
	budget = min(excess, s.available()-lim.minAvailable)
	if s.new >= lim.newGoal && budget < min(excess, lim.shrinkStep()) {
		// Nothing waits for this room: the new ReplicaSet has its pods. Shrinking by the pod as each new one
		// becomes available would cost a write, an event and a round of deletions per pod.
		budget = 0
	}
	for i := range s.old {
		down := min(budget, s.old[i])
		if down > 0 {
			s.old[i] -= down
			budget -= down
		}
	}
}

// shrinkStep is the least number of available old pods removed at once when nothing waits for the room:
// a quarter of maxUnavailable.
func (lim limits) shrinkStep() int32 {
	return max((lim.replicas-lim.minAvailable)/4, 1)
}

// scaleUpOld grows the old ReplicaSets back when the Deployment was scaled up: the largest one (the
// newest on a tie) takes the pods the new ReplicaSet does not, within the room maxSurge leaves.
func (s *sizes) scaleUpOld(lim limits) {
	up := min(lim.replicas-lim.newGoal-s.oldTotal(), lim.maxTotal-s.occupied())
	if up <= 0 || len(s.old) == 0 {
		return
	}
	best := 0
	for i, n := range s.old {
		if n >= s.old[best] {
			best = i
		}
	}
	s.old[best] += up
}
