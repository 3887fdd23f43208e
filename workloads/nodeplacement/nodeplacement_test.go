package nodeplacement

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func node(mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"zone": "z1"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("10")}}}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func TestFits(t *testing.T) {
	taint := func(effect corev1.TaintEffect) func(*corev1.Node) {
		return func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: effect}} }
	}
	cordoned := func(n *corev1.Node) { n.Spec.Unschedulable = true }
	requests := func(cpu string) *corev1.PodSpec {
		return &corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}
	}
	plain := &corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}
	tolerant := &corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}
	tests := []struct {
		name string
		node *corev1.Node
		spec *corev1.PodSpec
		want bool
	}{
		{"a plain node", node(), plain, true},
		{"nodeSelector does not match", node(), &corev1.PodSpec{NodeSelector: map[string]string{"zone": "z2"}}, false},
		{"another nodeName", node(), &corev1.PodSpec{NodeName: "b"}, false},
		{"untolerated NoSchedule", node(taint(corev1.TaintEffectNoSchedule)), plain, false},
		{"untolerated NoExecute", node(taint(corev1.TaintEffectNoExecute)), plain, false},
		{"PreferNoSchedule", node(taint(corev1.TaintEffectPreferNoSchedule)), plain, true},
		{"tolerated taint", node(taint(corev1.TaintEffectNoExecute)), tolerant, true},
		{"cordoned", node(cordoned), plain, false},
		{"cordoned, the unschedulable taint tolerated", node(cordoned), tolerant, true},
		{"requests within allocatable", node(), requests("4"), true},
		{"requests above allocatable", node(), requests("4500m"), false},
		{"no pod slots", node(func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("0") }), plain, false},
	}
	for _, tt := range tests {
		if got := Fits(tt.node, tt.spec); got != tt.want {
			t.Errorf("%s: Fits = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPinAndTarget(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{Affinity: PinToNode(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{}}, "n1")}}
	if got, err := TargetNode(p); err != nil || got != "n1" || p.Spec.Affinity.PodAffinity == nil {
		t.Errorf("pinned to %q (%v); pod affinity kept: %v", got, err, p.Spec.Affinity.PodAffinity != nil)
	}
	p.Spec.NodeName = "n2"
	if got, _ := TargetNode(p); got != "n2" {
		t.Errorf("a bound pod's node is its nodeName: %q", got)
	}
	byNode, unplaced := ByNode([]*corev1.Pod{p, {}})
	if len(byNode["n2"]) != 1 || len(unplaced) != 1 {
		t.Errorf("by node %v, unplaced %d", byNode, len(unplaced))
	}
}

func TestNodeChanged(t *testing.T) {
	before := node()
	for name, tt := range map[string]struct {
		after *corev1.Node
		want  bool
	}{
		"heartbeat only": {node(func(n *corev1.Node) { n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady}} }), false},
		"labels":         {node(func(n *corev1.Node) { n.Labels["x"] = "y" }), true},
		"taints":         {node(func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}} }), true},
		"cordoned":       {node(func(n *corev1.Node) { n.Spec.Unschedulable = true }), true},
	} {
		if got := NodeChanged.Update(event.UpdateEvent{ObjectOld: before, ObjectNew: tt.after}); got != tt.want {
			t.Errorf("%s: %v, want %v", name, got, tt.want)
		}
	}
}
