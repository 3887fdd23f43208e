package plan

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/workloads/nodeplacement"
)

// Placement is where a job's pods are and go.
type Placement struct {
	// Desired are the nodes that want a pod: those whose pod fits them still, and those without a pod that the
	// template fits.
	Desired int
	// Pending are the desired nodes without a pod yet, by name.
	Pending []string
	// Busy are the desired nodes with an active pod (Classify): the job is not done with them. A pod failed by
	// its restarts is done, as a failed one.
	Busy int
	// Misplaced are the live pods on nodes they no longer fit (a taint, a label or the node's resources
	// changed): upstream deletes them.
	Misplaced []*corev1.Pod
	// Duplicates are the nodes with more than one live pod.
	Duplicates []string
}

// Place judges every node for the job: a node with a pod by that pod's own spec, a node without one by the
// template's (nodeplacement.Fits). Pods on nodes that are gone, or pinned to none, are left out.
func Place(nodes []*corev1.Node, template *corev1.PodSpec, pods []*corev1.Pod, restartLimit int32) Placement {
	byNode, _ := nodeplacement.ByNode(pods)
	var p Placement
	for _, n := range sortedByName(nodes) {
		onNode := byNode[n.Name]
		if len(onNode) == 0 {
			if nodeplacement.Fits(n, template) {
				p.Desired++
				p.Pending = append(p.Pending, n.Name)
			}
			continue
		}
		p.placeOn(n, onNode, restartLimit)
	}
	return p
}

// placeOn judges a node that has pods: by its newest pod, since an older one may have been created before the
// node changed.
func (p *Placement) placeOn(n *corev1.Node, pods []*corev1.Pod, restartLimit int32) {
	live := slices.DeleteFunc(slices.Clone(pods), func(q *corev1.Pod) bool { return q.DeletionTimestamp != nil })
	if len(live) > 1 {
		p.Duplicates = append(p.Duplicates, n.Name)
	}
	if !nodeplacement.Fits(n, &newest(pods).Spec) {
		p.Misplaced = append(p.Misplaced, live...)
		return
	}
	p.Desired++
	if slices.ContainsFunc(pods, func(q *corev1.Pod) bool { return running(q) && !RestartsExceeded(q, restartLimit) }) {
		p.Busy++
	}
}

func newest(pods []*corev1.Pod) *corev1.Pod {
	out := pods[0]
	for _, q := range pods[1:] {
		if out.CreationTimestamp.Before(&q.CreationTimestamp) {
			out = q
		}
	}
	return out
}

func sortedByName(nodes []*corev1.Node) []*corev1.Node {
	out := slices.Clone(nodes)
	slices.SortFunc(out, func(a, b *corev1.Node) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}
