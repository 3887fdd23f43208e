package plan

import (
	"k8s.io/apimachinery/pkg/util/sets"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/workloads/updatesort"
)

// update picks the pods to move to the update revision now. Pods labelled for deletion go first, then the
// pods of the update order; either kind only while fewer than maxUnavailable pods are unavailable, unless the
// pod is unavailable already (updating it costs nothing more). An ordered set updates from the highest
// ordinal down and an unordered one by priority; both leave partition pods alone.
func update(in Input, t slotted, s *Step) {
	unavailable := unavailableSlots(in, t, s)
	specified := deleteSpecified(in, t, unavailable, s)
	limit := int(in.Strategy.MaxUnavailable)
	for _, p := range updateOrder(in, t) {
		n := Ordinal(in.Name, p.Name)
		claims, resize := in.Claims[n]
		if Revision(p) == in.UpdateRevision && (!resize || claims.Compatible) {
			continue
		}
		if unavailable.Len() >= limit && !unavailable.Has(n) {
			return
		}
		if resize && !resizeClaims(p, claims, s) {
			unavailable.Insert(n)
			continue
		}
		if Revision(p) != in.UpdateRevision && !specified.Has(n) && !Terminating(p) {
			s.Update = append(s.Update, p)
			unavailable.Insert(n)
		}
	}
}

// resizeClaims asks for the pod's claims to be expanded when they are smaller than their templates, and
// reports whether the expansion is done so the pod may be updated.
func resizeClaims(p *corev1.Pod, c ClaimState, s *Step) bool {
	if !c.Compatible {
		s.Resize = append(s.Resize, p)
		return false
	}
	return c.Completed
}

// unavailableSlots are the slots whose pod does not serve: missing, unhealthy, updating in place, not yet
// available for minReadySeconds, or with claims not ready.
func unavailableSlots(in Input, t slotted, s *Step) sets.Set[int32] {
	out := sets.New[int32]()
	for _, n := range t.slots {
		p := t.byOrd[n]
		if p == nil || !Healthy(p) || Updating(p) {
			out.Insert(n)
			continue
		}
		if ok, wait := Available(p, in.Strategy.MinReadySeconds, in.Now); !ok {
			s.wakeIn(wait)
			out.Insert(n)
			continue
		}
		if c, ok := in.Claims[n]; ok && !c.Ready {
			out.Insert(n)
		}
	}
	return out
}

// deleteSpecified deletes the pods labelled apps.kruise.io/specified-delete, highest ordinal first, within
// maxUnavailable and whatever the partition; it returns their ordinals.
func deleteSpecified(in Input, t slotted, unavailable sets.Set[int32], s *Step) sets.Set[int32] {
	out := sets.New[int32]()
	for i := len(t.slots) - 1; i >= 0; i-- {
		n := t.slots[i]
		p := t.byOrd[n]
		if p == nil || !Specified(p) || Terminating(p) {
			continue
		}
		if unavailable.Len() >= int(in.Strategy.MaxUnavailable) && !unavailable.Has(n) {
			continue
		}
		s.Delete = append(s.Delete, Deletion{Pod: p, Reason: ReasonSpecified})
		out.Insert(n)
		unavailable.Insert(n)
	}
	return out
}

// updateOrder is upstream's order of the pods that may move to the update revision, at most
// replicas - partition of them. Ordered: the highest slots down, the lowest partition slots left out.
// Unordered: pods already updated or terminating first (they count against the partition), then the others
// by priority, highest ordinal first among equals.
func updateOrder(in Input, t slotted) []*corev1.Pod {
	st := in.Strategy
	room := int(st.Replicas - st.Partition)
	if room <= 0 {
		return nil
	}
	if !st.Unordered {
		var out []*corev1.Pod
		for i := len(t.slots) - 1; i >= int(st.Partition) && len(t.slots)-1-i < room; i-- {
			if p := t.byOrd[t.slots[i]]; p != nil {
				out = append(out, p)
			}
		}
		return out
	}
	var done, waiting []*corev1.Pod
	for i := len(t.slots) - 1; i >= 0; i-- {
		switch p := t.byOrd[t.slots[i]]; {
		case p == nil:
		case Terminating(p) || Revision(p) == in.UpdateRevision:
			done = append(done, p)
		default:
			waiting = append(waiting, p)
		}
	}
	updatesort.Stable(waiting, updatesort.NewPriority(st.Priority))
	return append(done, waiting...)[:min(room, len(done)+len(waiting))]
}
