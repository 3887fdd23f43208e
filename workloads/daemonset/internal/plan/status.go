package plan

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Counts are the node counts of upstream's status.
type Counts struct {
	Desired, Current, Misscheduled, Ready, Updated, Available int32
}

// Unavailable is the number of nodes that should run a pod and have none available.
func (c Counts) Unavailable() int32 { return c.Desired - c.Available }

// Count counts as upstream's DaemonSet controller: a node that should run a pod and has one is current; its
// oldest pod decides whether it is ready, available (for minReadySeconds, its in-place update finished) and
// updated; a node with a pod that should not run one is misscheduled.
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
	sorted := slices.Clone(pods)
	sortByAge(sorted)
	oldest := sorted[0]
	if Ready(oldest) {
		c.Ready++
		if availableDaemon(oldest, in.Strategy.MinReadySeconds, in.Now) {
			c.Available++
		}
	}
	if in.Revision.Updated(oldest) {
		c.Updated++
	}
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
