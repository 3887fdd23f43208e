package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Update is one step of a rolling update.
type Update struct {
	// Replace are old pods to move to the update revision: in place where the strategy and the template
	// change allow, else deleted (the manage step then creates the new pod).
	Replace []*corev1.Pod
	// Create names the nodes that get an updated pod beside their old one (surge).
	Create []string
	// Delete are old pods whose node's updated pod is available (surge).
	Delete []*corev1.Pod
	// Wake is how soon a pod passes minReadySeconds and the update can go on.
	Wake time.Duration
}

// Empty reports whether the step changes nothing.
func (u Update) Empty() bool { return len(u.Replace) == 0 && len(u.Create) == 0 && len(u.Delete) == 0 }

// PlanUpdate is the next step of a RollingUpdate over the nodes the partition and rollingUpdate.selector
// leave to update (UpdateNodes): without surge, old pods are replaced while fewer than maxUnavailable of
// those nodes lack an available pod; with surge, up to maxSurge nodes get an updated pod beside the old one,
// which goes once its replacement is available. An old pod that is not available is replaced at once,
// whatever the limits: it serves nothing.
func PlanUpdate(in Input) Update {
	if !in.Strategy.Rolling || in.Strategy.Paused {
		return Update{}
	}
	nodes := UpdateNodes(in)
	if in.Strategy.MaxSurge == 0 {
		return planUnavailable(in, nodes)
	}
	return planSurge(in, nodes)
}

// planUnavailable replaces old pods within maxUnavailable.
func planUnavailable(in Input, nodes []string) Update {
	var u Update
	var candidates []*corev1.Pod
	unavailable := 0
	for _, name := range nodes {
		updated, old, ok := in.Revision.split(in.Pods[name])
		switch {
		case !ok, nilOrPreDeleting(old) == nilOrPreDeleting(updated):
			// Pruned, created or deleted by the manage step first; the node counts as unavailable meanwhile.
			unavailable++
		case updated != nil:
			available, wait := Available(updated, in.Strategy.MinReadySeconds, in.Now)
			if !available {
				unavailable++
			}
			if PreDeleting(updated) {
				unavailable++
			}
			u.Wake = earliest(u.Wake, wait)
		default:
			if available, _ := Available(old, in.Strategy.MinReadySeconds, in.Now); !available {
				u.Replace = append(u.Replace, old)
			} else if unavailable < in.Strategy.MaxUnavailable {
				candidates = append(candidates, old)
			}
		}
	}
	room := min(max(in.Strategy.MaxUnavailable-unavailable, 0), len(candidates))
	u.Replace = append(u.Replace, candidates[:room]...)
	return u
}

// planSurge adds updated pods beside old ones within maxSurge and retires old pods whose replacement is
// available.
func planSurge(in Input, nodes []string) Update {
	var u Update
	var candidates []string
	surging := 0
	for _, name := range nodes {
		updated, old, ok := in.Revision.split(in.Pods[name])
		switch {
		case !ok:
			surging++
		case nilOrPreDeleting(old):
		case updated == nil:
			if available, _ := Available(old, in.Strategy.MinReadySeconds, in.Now); !available {
				u.Create = append(u.Create, name)
			} else if surging < in.Strategy.MaxSurge {
				candidates = append(candidates, name)
			}
		default:
			available, wait := Available(updated, in.Strategy.MinReadySeconds, in.Now)
			u.Wake = earliest(u.Wake, wait)
			if !available || PreDeleting(updated) {
				surging++
				continue
			}
			u.Delete = append(u.Delete, old)
		}
	}
	room := min(max(in.Strategy.MaxSurge-surging, 0), len(candidates))
	u.Create = append(u.Create, candidates[:room]...)
	return u
}

// UpdateNodes are the nodes a rolling update may move to the update revision, in the order it does: of
// every node that has a daemon pod or should run one, the nodes already updated or between pods come first,
// then the old ones (only those rollingUpdate.selector matches, when it is set), each group by name from the
// last; the partition keeps the nodes past len(all)-partition on their old revision.
func UpdateNodes(in Input) []string {
	var updated, between, old []string
	all := 0
	for i := len(in.Nodes) - 1; i >= 0; i-- {
		node := in.Nodes[i]
		pods, has := in.Pods[node.Name]
		if !has && !node.ShouldRun {
			continue
		}
		all++
		newPod, oldPod, ok := in.Revision.split(pods)
		switch {
		case !ok || newPod != nil:
			updated = append(updated, node.Name)
		case nilOrPreDeleting(oldPod):
			between = append(between, node.Name)
		case node.Selected:
			old = append(old, node.Name)
		}
	}
	order := append(append(updated, between...), old...)
	return order[:max(min(all-in.Strategy.Partition, len(order)), 0)]
}

// Target is how many nodes should run the update revision once the rolling update is through: the nodes
// UpdateNodes leaves to it that may keep a pod; every such node when nothing holds the update back.
func Target(in Input) int {
	n := 0
	should := map[string]bool{}
	for _, node := range in.Nodes {
		should[node.Name] = node.ShouldContinue
	}
	for _, name := range UpdateNodes(in) {
		if should[name] {
			n++
		}
	}
	return n
}
