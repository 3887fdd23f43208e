package plan

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Input is what the planners need of one DaemonSet.
type Input struct {
	Now      time.Time
	Strategy Strategy
	Revision Revision
	// Nodes are every node of the cluster, sorted by name (Nodes).
	Nodes []Node
	// Pods are the DaemonSet's pods by the node they run on or are pinned to (ByNode), terminating ones
	// included: a node whose pod is still terminating gets no new one yet.
	Pods map[string][]*corev1.Pod
	// Backoff holds the nodes whose failed pod was deleted too recently to delete the next one.
	Backoff map[string]bool
}

// Desired is the number of nodes that should run a daemon pod.
func (in Input) Desired() int {
	n := 0
	for _, node := range in.Nodes {
		if node.ShouldRun {
			n++
		}
	}
	return n
}

// Manage is what keeps one pod on every node that should run one.
type Manage struct {
	// Create names the nodes that get a pod of the update revision.
	Create []string
	// Delete are the pods to go: failed, excess, on nodes that should not run them, preparing deletion, or
	// pinned to nodes that no longer exist.
	Delete []*corev1.Pod
	// Failed are the failed pods among Delete, each worth a Warning event.
	Failed []*corev1.Pod
	// Wake is how soon a surging node's new pod becomes available and its old pod can go.
	Wake time.Duration
}

// Empty reports whether there is nothing to do.
func (m Manage) Empty() bool { return len(m.Create) == 0 && len(m.Delete) == 0 }

// PlanManage decides the creates and deletes of kube's DaemonSet controller for every node, then holds back
// creates as the partition says when pods are created progressively.
func PlanManage(in Input) Manage {
	var m Manage
	known := map[string]bool{}
	for _, node := range in.Nodes {
		known[node.Name] = true
		n := planNode(in, node)
		m.Create = append(m.Create, n.Create...)
		m.Delete = append(m.Delete, n.Delete...)
		m.Failed = append(m.Failed, n.Failed...)
		m.Wake = earliest(m.Wake, n.Wake)
	}
	m.Delete = append(m.Delete, orphans(in, known)...)
	m.Create = progressive(in, m.Create)
	return m
}

// orphans are the live pods pinned to nodes that no longer exist. kube's pod garbage collector removes
// bound ones only after a quarantine; the DaemonSet deletes them at once, so that a removed node loses its pod.
func orphans(in Input, known map[string]bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, name := range sortedKeys(in.Pods) {
		if known[name] {
			continue
		}
		for _, p := range in.Pods[name] {
			if p.DeletionTimestamp == nil {
				out = append(out, p)
			}
		}
	}
	return out
}

// planNode is one node's share of PlanManage.
func planNode(in Input, node Node) Manage {
	pods := in.Pods[node.Name]
	switch {
	case node.ShouldRun && len(pods) == 0:
		return Manage{Create: []string{node.Name}}
	case node.ShouldContinue:
		return keepOne(in, node, pods)
	default:
		return Manage{Delete: live(pods)}
	}
}

// keepOne prunes a node that may keep its pod: failed pods and pods preparing deletion go; of the running
// ones one stays, or two while a surge replaces the old one.
func keepOne(in Input, node Node, pods []*corev1.Pod) Manage {
	var m Manage
	var running []*corev1.Pod
	for _, p := range live(pods) {
		switch {
		case p.Status.Phase == corev1.PodFailed:
			if !in.Backoff[node.Name] {
				m.Delete, m.Failed = append(m.Delete, p), append(m.Failed, p)
			}
		case PreDeleting(p):
			m.Delete = append(m.Delete, p)
		default:
			running = append(running, p)
		}
	}
	sortByAge(running)
	if !in.Strategy.AllowsSurge() {
		if len(running) > 1 {
			m.Delete = append(m.Delete, running[1:]...)
		}
		return m
	}
	if len(running) == 0 && node.ShouldRun {
		m.Create = []string{node.Name}
	}
	return surgeNode(in, m, running)
}

// surgeNode keeps the oldest updated and the oldest old pod of a surging node, and the old one only while
// the updated one is not yet available and the old one still serves.
func surgeNode(in Input, m Manage, running []*corev1.Pod) Manage {
	var newest, oldest *corev1.Pod
	for _, p := range running {
		slot := &oldest
		if in.Revision.Updated(p) {
			slot = &newest
		}
		if *slot == nil {
			*slot = p
			continue
		}
		m.Delete = append(m.Delete, p)
	}
	if newest == nil || oldest == nil {
		return m
	}
	available, wait := Available(newest, in.Strategy.MinReadySeconds, in.Now)
	if !Ready(oldest) || available {
		m.Delete = append(m.Delete, oldest)
	}
	m.Wake = earliest(m.Wake, wait)
	return m
}

// progressive keeps pods of the update revision away from more nodes than the partition allows, with the
// progressive-create-pod annotation; without it every node that needs a pod gets one. Nodes go in name order.
func progressive(in Input, create []string) []string {
	sort.Strings(create)
	s := in.Strategy
	if !s.Rolling || s.Partition == 0 || !s.Progressive {
		return create
	}
	updated := 0
	for _, node := range in.Nodes {
		if p, _, ok := in.Revision.split(in.Pods[node.Name]); ok && p != nil {
			updated++
		}
	}
	desired := in.Desired()
	allowed := max(desired-updated-min(s.Partition, desired), 0)
	return create[:min(allowed, len(create))]
}

func live(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// earliest is the sooner of two waits, 0 meaning none.
func earliest(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
