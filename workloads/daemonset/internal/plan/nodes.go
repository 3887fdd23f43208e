package plan

import (
	"errors"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
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
		run, cont := Eligibility(n, spec)
		out = append(out, Node{Name: n.Name, ShouldRun: run, ShouldContinue: cont,
			Selected: selector == nil || selector.Matches(labels.Set(n.Labels))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Eligibility is kube's DaemonSet controller's judgement of a node for a daemon pod spec: spec.nodeName,
// nodeSelector and required node affinity must match; a NoSchedule or NoExecute taint the pod does not
// tolerate keeps a new pod away, and only an untolerated NoExecute taint evicts a running one. A node
// affinity that does not parse matches no node.
func Eligibility(node *corev1.Node, spec *corev1.PodSpec) (shouldRun, shouldContinue bool) {
	if spec.NodeName != "" && spec.NodeName != node.Name {
		return false, false
	}
	if fits, err := nodeaffinity.NewRequiredNodeAffinity(spec.NodeSelector, spec.Affinity).Match(node); err != nil || !fits {
		return false, false
	}
	if !untolerated(node, spec, corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute) {
		return true, true
	}
	return false, !untolerated(node, spec, corev1.TaintEffectNoExecute)
}

func untolerated(node *corev1.Node, spec *corev1.PodSpec, effects ...corev1.TaintEffect) bool {
	_, found := v1helper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, spec.Tolerations, func(t *corev1.Taint) bool {
		for _, e := range effects {
			if t.Effect == e {
				return true
			}
		}
		return false
	}, false)
	return found
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

// errNoTargetNode: a pod that is neither bound nor pinned to one node by metadata.name affinity.
var errNoTargetNode = errors.New("pod has no node name and no node affinity on metadata.name")

// TargetNode is the node a daemon pod runs on or is pinned to: spec.nodeName once bound, else the node its
// required affinity names by metadata.name (how daemon pods reach the default scheduler).
func TargetNode(pod *corev1.Pod) (string, error) {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName, nil
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return "", errNoTargetNode
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, req := range term.MatchFields {
			if req.Key == metav1.ObjectNameField && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) == 1 {
				return req.Values[0], nil
			}
		}
	}
	return "", errNoTargetNode
}

// PinToNode replaces the required node affinity with one term that names the node by metadata.name, so that
// the default scheduler binds the pod there and nowhere else; the rest of the affinity is kept.
func PinToNode(affinity *corev1.Affinity, node string) *corev1.Affinity {
	sel := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = sel
	return affinity
}

// ByNode groups pods by TargetNode; pods without one are returned apart.
func ByNode(pods []*corev1.Pod) (byNode map[string][]*corev1.Pod, unplaced []*corev1.Pod) {
	byNode = map[string][]*corev1.Pod{}
	for _, p := range pods {
		node, err := TargetNode(p)
		if err != nil {
			unplaced = append(unplaced, p)
			continue
		}
		byNode[node] = append(byNode[node], p)
	}
	return byNode, unplaced
}
