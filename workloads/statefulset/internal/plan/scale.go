package plan

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// scaleUp walks the slots in ordinal order: it creates the missing pods and replaces a finished one. With
// scaleStrategy.maxUnavailable, every unavailable pod met on the way (a new one included) spends the budget;
// once spent the walk ends and the scale-down and update phases run. It reports whether the step stops.
func scaleUp(in Input, t slotted, s *Step) (stop bool) {
	var budget *int32
	if b := in.Strategy.ScaleMaxUnavailable; b != nil {
		budget = new(*b)
	}
	for i, n := range t.slots {
		stop, spent := replica(in, t, n, budget, s)
		if stop {
			return true
		}
		if spent {
			s.ScaleLimited = missingAfter(t, i)
			break
		}
	}
	return false
}

// replica handles the pod of slot n (nil when missing); spent reports that the scale budget ran out.
func replica(in Input, t slotted, n int32, budget *int32, s *Step) (stop, spent bool) {
	ordered := !in.Strategy.Parallel
	p := t.byOrd[n]
	switch {
	case p == nil:
		s.Create = append(s.Create, Creation{Ordinal: n, Revision: t.newRevision[n]})
		if ordered {
			s.WaitingFor = PodName(in.Name, n)
			return true, false
		}
		return false, spend(budget)
	case Finished(p):
		// Upstream ends the step here: the replacement is created once the finished pod is gone.
		if !Terminating(p) {
			s.Delete = append(s.Delete, Deletion{Pod: p, Reason: ReasonFinished})
		}
		return true, false
	case Terminating(p):
		if ordered {
			s.WaitingFor = p.Name
			return true, false
		}
		return false, spend(budget)
	}
	if ordered || budget != nil {
		if ok, wait := Available(p, in.Strategy.MinReadySeconds, in.Now); !ok {
			s.wakeIn(wait)
			if ordered {
				s.WaitingFor = p.Name
				return true, false
			}
			if spend(budget) {
				return false, true
			}
		}
	}
	if needsRepair(p, n, in.IndexLabel) {
		s.Repair = append(s.Repair, p)
	}
	return false, false
}

// spend takes one from the budget (nil: unbounded) and reports whether it ran out.
func spend(budget *int32) bool {
	if budget == nil {
		return false
	}
	*budget--
	return *budget <= 0
}

func missingAfter(t slotted, i int) bool {
	for _, n := range t.slots[i+1:] {
		if t.byOrd[n] == nil {
			return true
		}
	}
	return false
}

// needsRepair reports whether the pod lacks its identity labels: its name, and its ordinal when indexLabel.
func needsRepair(p *corev1.Pod, n int32, indexLabel bool) bool {
	if p.Labels[appsv1.StatefulSetPodNameLabel] != p.Name {
		return true
	}
	return indexLabel && p.Labels[appsv1.PodIndexLabel] != strconv.Itoa(int(n))
}

// scaleDown deletes the pods of ordinals the set gave up, highest first. An ordered set deletes one at a time,
// each once the pods below it are available, except the lowest unhealthy pod, which goes at once.
func scaleDown(in Input, t slotted, s *Step) (stop bool) {
	ordered := !in.Strategy.Parallel
	first := firstUnhealthy(in, t)
	for _, p := range t.condemned {
		if Terminating(p) {
			if ordered {
				s.WaitingFor = p.Name
				return true
			}
			continue
		}
		if ordered && p != first {
			if ok, wait := Available(p, in.Strategy.MinReadySeconds, in.Now); !ok {
				s.wakeIn(wait)
				s.WaitingFor = p.Name
				return true
			}
		}
		s.Delete = append(s.Delete, Deletion{Pod: p, Reason: ReasonCondemned})
		if ordered {
			return true
		}
	}
	return false
}

// firstUnhealthy is the unhealthy pod of the lowest ordinal, nil when every pod is healthy.
func firstUnhealthy(in Input, t slotted) *corev1.Pod {
	var first *corev1.Pod
	consider := func(p *corev1.Pod) {
		if p != nil && !Healthy(p) && (first == nil || Ordinal(in.Name, p.Name) < Ordinal(in.Name, first.Name)) {
			first = p
		}
	}
	for _, n := range t.slots {
		consider(t.byOrd[n])
	}
	for _, p := range t.condemned {
		consider(p)
	}
	return first
}
