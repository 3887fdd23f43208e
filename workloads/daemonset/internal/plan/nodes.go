package plan

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/flotilla-dev/flotilla/workloads/nodeplacement"
)

// Node is what the planners know of a node.
type Node struct {
	Name string
	// ShouldRun: the node should run a daemon pod, so one is created where none is. ShouldContinue: a daemon
	// pod already there may stay (a NoSchedule taint the pod does not tolerate keeps new pods away only).
	ShouldRun, ShouldContinue bool
	// Selected: rollingUpdate.selector matches the node (every node when there is none).
	Selected bool
}

// Nodes judges every node for the DaemonSet's pod spec (with the daemon tolerations, DaemonSpec), sorted by
// name.
func Nodes(nodes []*corev1.Node, spec *corev1.PodSpec, selector labels.Selector) []Node {
	out := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		run, cont := nodeplacement.Eligibility(n, spec)
		out = append(out, Node{Name: n.Name, ShouldRun: run, ShouldContinue: cont,
			Selected: selector == nil || selector.Matches(labels.Set(n.Labels))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// daemonTolerations are the tolerations kube gives every daemon pod: node problems must neither evict it
// nor keep it away (network-unavailable only for host-network pods, which need no pod network).
func daemonTolerations(hostNetwork bool) []corev1.Toleration {
	t := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if hostNetwork {
		t = append(t, corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoSchedule})
	}
	return t
}

// DaemonSpec is a copy of the template's pod spec with the daemon tolerations, as kube adds them: an equal
// toleration (key, operator, value, effect) is replaced, any other appended.
func DaemonSpec(spec *corev1.PodSpec) *corev1.PodSpec {
	out := spec.DeepCopy()
	for _, t := range daemonTolerations(out.HostNetwork) {
		replaced := false
		for i := range out.Tolerations {
			if out.Tolerations[i].MatchToleration(&t) {
				out.Tolerations[i], replaced = t, true
				break
			}
		}
		if !replaced {
			out.Tolerations = append(out.Tolerations, t)
		}
	}
	return out
}
