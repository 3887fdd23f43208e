package plan

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	"github.com/flotilla-dev/flotilla/workloads/nodeplacement"
)

var t0 = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

// pod is a daemon pod of revision rev on node, created age seconds before t0; opts change it.
func pod(name, node, rev string, age int, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{HashLabel: rev},
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Duration(age) * time.Second))},
		Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady,
			Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }

// readyFor makes the pod Ready only d before t0.
func readyFor(d time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-d)) }
}

func failed(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }

func deleting(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }

func preDeleting(p *corev1.Pod) {
	p.Labels[kruiseappspub.LifecycleStateKey] = string(kruiseappspub.LifecycleStatePreparingDelete)
}

func unbound(p *corev1.Pod) {
	p.Spec.Affinity = nodeplacement.PinToNode(nil, p.Spec.NodeName)
	p.Spec.NodeName = ""
}

// nodes are eligible nodes n0..n<count-1>.
func nodes(count int) []Node {
	out := make([]Node, count)
	for i := range out {
		out[i] = Node{Name: fmt.Sprintf("n%d", i), ShouldRun: true, ShouldContinue: true, Selected: true}
	}
	return out
}

// fleet gives every node a ready pod of the old revision v1, named <node>-v1.
func fleet(ns []Node) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, n := range ns {
		out[n.Name] = []*corev1.Pod{pod(n.Name+"-v1", n.Name, "v1", 100)}
	}
	return out
}

func input(ns []Node, pods map[string][]*corev1.Pod, s Strategy) Input {
	return Input{Now: t0, Strategy: s, Revision: Revision{Hash: "v2"}, Nodes: ns, Pods: pods}
}

func rolling(maxUnavailable, maxSurge int) Strategy {
	return Strategy{Rolling: true, MaxUnavailable: maxUnavailable, MaxSurge: maxSurge, Burst: DefaultBurstReplicas}
}

func names(pods []*corev1.Pod) string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}
