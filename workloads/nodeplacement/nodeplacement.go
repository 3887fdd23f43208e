// Package nodeplacement judges nodes for the workloads that run one pod per node (Advanced DaemonSet,
// BroadcastJob) as kube's scheduler and DaemonSet controller would, and pins their pods to a node: the pods
// reach the default scheduler with a required node affinity on metadata.name, which binds them there and
// nowhere else. Everything here is pure.
package nodeplacement

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Eligibility is kube's DaemonSet controller's judgement of a node for a pod spec: spec.nodeName,
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
	if !Untolerated(node, spec, corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute) {
		return true, true
	}
	return false, !Untolerated(node, spec, corev1.TaintEffectNoExecute)
}

// Untolerated reports whether the node has a taint of one of the effects that the spec does not tolerate.
func Untolerated(node *corev1.Node, spec *corev1.PodSpec, effects ...corev1.TaintEffect) bool {
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

// errNoTargetNode: a pod that is neither bound nor pinned to one node by metadata.name affinity.
var errNoTargetNode = errors.New("pod has no node name and no node affinity on metadata.name")

// TargetNode is the node a pod runs on or is pinned to: spec.nodeName once bound, else the node its required
// affinity names by metadata.name.
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

// NodeChanged passes the node events that can change which pods a node should run: a node added or removed,
// its labels, taints or schedulability changed (not its heartbeats and status).
var NodeChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*corev1.Node)
		after, ok2 := e.ObjectNew.(*corev1.Node)
		if !ok1 || !ok2 {
			return true
		}
		return !labels.Equals(before.Labels, after.Labels) || before.Spec.Unschedulable != after.Spec.Unschedulable ||
			!taintsEqual(before.Spec.Taints, after.Spec.Taints)
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func taintsEqual(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].MatchTaint(&b[i]) {
			return false
		}
	}
	return true
}
