package plan

import (
	"cmp"
	"time"

	corev1 "k8s.io/api/core/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/updatesort"
)

// Input is what the planner sees of one CloneSet.
type Input struct {
	Now      time.Time
	Strategy Strategy
	// UpdateRevision is the revision of the current template; CurrentRevision the one before the update.
	UpdateRevision, CurrentRevision string
	// Pods are the CloneSet's active pods (not being deleted).
	Pods         []*corev1.Pod
	PodsToDelete map[string]bool
	// FreeIDs are instance ids whose claims outlived their pods, to be reused first. Terminating counts the
	// instances whose pod is still terminating while its claims wait for reuse: their replacements are
	// created once the old pod is gone (it holds the name and, often, the volume).
	FreeIDs          []string
	Terminating      int32
	PriorityStrategy *kruiseappspub.UpdatePriorityStrategy
	ScatterStrategy  kruiseappspub.UpdateScatterStrategy
}

// Creation is one pod to create; an empty ID asks the caller for a fresh one.
type Creation struct {
	ID       string
	Revision string
}

// Scale is the scale decision of one reconcile.
type Scale struct {
	Delete []*corev1.Pod
	Create []Creation
	// Limited is set when scaleStrategy.maxUnavailable held creations back; Limit is how many it allowed.
	Limited bool
	Limit   int32
}

// Empty reports whether the decision changes nothing.
func (s Scale) Empty() bool { return len(s.Delete) == 0 && len(s.Create) == 0 }

// PlanScale deletes the pods named for deletion, then creates or deletes pods until the CloneSet has its
// replicas (plus the surge of an update). New pods take the update revision while fewer than
// expectedUpdatedReplicas run it; scale-down removes pods of the revision in excess first.
func PlanScale(in Input) Scale {
	var s Scale
	var rest []*corev1.Pod
	for _, p := range in.Pods {
		if Specified(p, in.PodsToDelete) {
			s.Delete = append(s.Delete, p)
		} else {
			rest = append(rest, p)
		}
	}
	target := in.Strategy.Replicas + surge(in, rest)
	switch n := int32(len(rest)); {
	case n < target:
		s.Create, s.Limited, s.Limit = creations(in, rest, target-n)
	case n > target:
		s.Delete = append(s.Delete, scaleDown(in, rest, target)...)
	}
	return s
}

// surge is how many pods an update may add above replicas (at most maxSurge): new-revision pods beside the
// old ones, whatever the update type. The CloneSet wants expectedUpdatedReplicas new pods, and keeps the old
// pods that no available new pod replaces yet (never fewer than the partition's), like a Deployment keeps
// its old ReplicaSet until the new pods are available. A blue-green release relies on this: its new pods
// never become available, so every old pod stays beside them. A paused update and OnDelete, which never
// replaces pods itself, do not surge.
func surge(in Input, pods []*corev1.Pod) int32 {
	st := in.Strategy
	if st.Paused || st.Type == kruiseappsv1alpha1.OnDeleteCloneSetUpdateStrategyType {
		return 0
	}
	var old, newAvailable int32
	for _, p := range pods {
		switch ok, _ := Available(p, st.MinReadySeconds, in.Now); {
		case Revision(p) != in.UpdateRevision:
			old++
		case ok:
			newAvailable++
		}
	}
	oldKept := min(old, st.Replicas-min(st.ExpectedUpdated, newAvailable))
	return max(0, min(st.MaxSurge, oldKept+st.ExpectedUpdated-st.Replicas))
}

func creations(in Input, pods []*corev1.Pod, n int32) ([]Creation, bool, int32) {
	limited, limit := false, n
	if mu := in.Strategy.ScaleMaxUnavailable; mu != nil {
		limit = max(0, *mu-unavailable(pods, in.Strategy.MinReadySeconds, in.Now))
		limited = limit < n
	}
	n = min(n, limit, max(0, n-in.Terminating))
	updated := countRevision(pods, in.UpdateRevision)
	out := make([]Creation, 0, n)
	for i := range n {
		c := Creation{Revision: in.CurrentRevision}
		if updated < in.Strategy.ExpectedUpdated || in.CurrentRevision == "" {
			c.Revision, updated = in.UpdateRevision, updated+1
		}
		if int(i) < len(in.FreeIDs) {
			c.ID = in.FreeIDs[i]
		}
		out = append(out, c)
	}
	return out, limited, limit
}

func unavailable(pods []*corev1.Pod, minReadySeconds int32, now time.Time) int32 {
	var n int32
	for _, p := range pods {
		if ok, _ := Available(p, minReadySeconds, now); !ok {
			n++
		}
	}
	return n
}

// scaleDown picks len(pods)-target pods: from the revision in excess first, each group in deletion order.
func scaleDown(in Input, pods []*corev1.Pod, target int32) []*corev1.Pod {
	wantUpdated := min(in.Strategy.ExpectedUpdated+surge(in, pods), target)
	var updated, others []*corev1.Pod
	for _, p := range pods {
		if Revision(p) == in.UpdateRevision {
			updated = append(updated, p)
		} else {
			others = append(others, p)
		}
	}
	excessOld := max(0, int32(len(others))-(target-wantUpdated))
	n := int32(len(pods)) - target
	first, second := others, updated
	if excessOld == 0 {
		first, second = updated, others
	}
	byDeletion(first, in.Now)
	byDeletion(second, in.Now)
	return append(first, second...)[:n]
}

// byDeletion orders pods the way the scale-down takes them: already preparing deletion, unscheduled,
// pending, not ready, ready for a shorter time, restarted more, newer.
func byDeletion(pods []*corev1.Pod, now time.Time) {
	updatesort.Stable(pods,
		func(a, b *corev1.Pod) int { return inState(a, b, kruiseappspub.LifecycleStatePreparingDelete) },
		func(a, b *corev1.Pod) int { return boolFirst(a.Spec.NodeName == "", b.Spec.NodeName == "") },
		func(a, b *corev1.Pod) int { return cmp.Compare(phaseRank(a.Status.Phase), phaseRank(b.Status.Phase)) },
		func(a, b *corev1.Pod) int { return readyOrder(a, b, now) },
		func(a, b *corev1.Pod) int { return cmp.Compare(restarts(b), restarts(a)) },
		func(a, b *corev1.Pod) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) },
	)
}

// boolFirst puts the pod for which the property holds first.
func boolFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

func phaseRank(p corev1.PodPhase) int {
	switch p {
	case corev1.PodPending:
		return 0
	case corev1.PodUnknown, "":
		return 1
	default:
		return 2
	}
}

func readyOrder(a, b *corev1.Pod, now time.Time) int {
	ra, sa := Ready(a)
	rb, sb := Ready(b)
	if c := boolFirst(!ra, !rb); c != 0 || !ra {
		return c
	}
	return cmp.Compare(now.Sub(sa), now.Sub(sb))
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n = max(n, c.RestartCount)
	}
	return n
}

// inState puts the pod in lifecycle state s first.
func inState(a, b *corev1.Pod, s kruiseappspub.LifecycleStateType) int {
	return boolFirst(state(a) == s, state(b) == s)
}
