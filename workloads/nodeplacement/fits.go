package nodeplacement

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// Fits is the scheduler's judgement of an empty node for a pod spec, as upstream's BroadcastJob controller
// makes it: what Eligibility requires for a new pod (nodeName, nodeSelector and required affinity match, no
// untolerated NoSchedule or NoExecute taint), a node that is not cordoned unless the pod tolerates the
// unschedulable taint, and the pod's requests within the node's allocatable resources, pods included.
func Fits(node *corev1.Node, spec *corev1.PodSpec) bool {
	if run, _ := Eligibility(node, spec); !run {
		return false
	}
	return Schedulable(node, spec) && ResourcesFit(node, spec)
}

// Schedulable reports whether a pod of spec may go to the node as far as cordoning goes: a cordoned node
// takes only pods that tolerate its unschedulable taint.
func Schedulable(node *corev1.Node, spec *corev1.PodSpec) bool {
	if !node.Spec.Unschedulable {
		return true
	}
	return v1helper.TolerationsTolerateTaint(klog.Background(), spec.Tolerations,
		&corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}, false)
}

// ResourcesFit reports whether the node's allocatable resources hold one pod of spec with nothing else on it:
// a pod slot, and every resource the pod requests (its containers, init containers and overhead, as the
// scheduler adds them up).
func ResourcesFit(node *corev1.Node, spec *corev1.PodSpec) bool {
	allocatable := node.Status.Allocatable
	if pods, ok := allocatable[corev1.ResourcePods]; !ok || pods.Value() < 1 {
		return false
	}
	requests := resourcehelper.PodRequests(&corev1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{})
	for name, want := range requests {
		if want.IsZero() || name == corev1.ResourcePods {
			continue
		}
		have := allocatable[name]
		if have.Cmp(want) < 0 {
			return false
		}
	}
	return true
}
