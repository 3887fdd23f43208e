package plan

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Counts are the node counts of upstream's status, and the nodes whose pod is updated and ready (UpdatedReady,
// which the image pre-download waits for).
type Counts struct {
	Desired, Current, Misscheduled, Ready, Updated, Available, UpdatedReady int32
}

// Unavailable is the number of nodes that should run a pod and have none available.
func (c Counts) Unavailable() int32 { return c.Desired - c.Available }

// Count counts as upstream's DaemonSet controller: a node that should run a pod and has one is current; its
// oldest pod (Revision.oldest) decides whether it is ready, available (for minReadySeconds, its in-place update
// finished) and updated; a node with a pod that should not run one is misscheduled.
func Count(in Input) Counts {
	var c Counts
	for _, node := range in.Nodes {
		pods := in.Pods[node.Name]
		if !node.ShouldRun {
			if len(pods) > 0 {
				c.Misscheduled++
			}
			continue
		}
		c.Desired++
		if len(pods) == 0 {
			continue
		}
		c.Current++
		countOldest(in, pods, &c)
	}
	return c
}

// countOldest counts a node by its oldest pod.
func countOldest(in Input, pods []*corev1.Pod, c *Counts) {
	oldest := in.Revision.oldest(pods)
	if Ready(oldest) {
		c.Ready++
		if availableDaemon(oldest, in.Strategy.MinReadySeconds, in.Now) {
			c.Available++
		}
	}
	if in.Revision.Updated(oldest) {
		c.Updated++
		if Ready(oldest) {
			c.UpdatedReady++
		}
	}
}

// oldest is the pod that speaks for its node in the status: the first as kube's DaemonSet controller ranks
// them, except that a pod of another revision goes before an updated pod created in the same second.
// Creation timestamps have whole seconds, so a surge's new pod can share its old pod's second; kube would rank
// them by name and, half the time, count the node by the new pod, not yet ready, while the old one still
// serves, reporting it unavailable. The controller creates only pods of the update revision, so of the two
// the other revision's pod was there first (a rollback within that same second aside).
func (r Revision) oldest(pods []*corev1.Pod) *corev1.Pod {
	sorted := slices.Clone(pods)
	sortByAge(sorted)
	first := sorted[0]
	if !r.Updated(first) {
		return first
	}
	for _, p := range sorted[1:] {
		if !sameRank(first, p) {
			break
		}
		if !r.Updated(p) {
			return p
		}
	}
	return first
}

// sameRank reports whether sortByAge tells a and b apart by name alone.
func sameRank(a, b *corev1.Pod) bool {
	return (a.Spec.NodeName != "") == (b.Spec.NodeName != "") && a.CreationTimestamp.Equal(&b.CreationTimestamp)
}

// Pending is how soon the first pod counted ready but not yet available (minReadySeconds) becomes available;
// 0 when none waits.
func Pending(in Input) time.Duration {
	var wake time.Duration
	for _, node := range in.Nodes {
		for _, p := range in.Pods[node.Name] {
			if _, wait := Available(p, in.Strategy.MinReadySeconds, in.Now); wait > 0 {
				wake = earliest(wake, wait)
			}
		}
	}
	return wake
}
