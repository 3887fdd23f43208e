package plan

import (
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// DeletionCostAnnotation is the annotation ReplicaSets and CloneSets read to choose which pod to delete
// first on scale-down: the lowest cost goes first.
const DeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// Upstream's deletion costs: pods within their subset's maxReplicas are kept longest, pods of an unlimited
// subset come next, and a limited subset's surplus goes first.
const (
	CostWithin    = 100
	CostUnlimited = 0
	CostSurplus   = -100
)

// DeletionCosts are the costs wanted on the active pods of each subset, by pod name. A limited subset
// holding more pods than its maxReplicas marks the surplus, chosen among the pods as kube's ReplicaSet
// controller would delete them (unscheduled, then pending, then not ready, then the newest). A subset whose
// maxReplicas cannot be read is left out.
func DeletionCosts(ws *kruiseappsv1alpha1.WorkloadSpread, bySubset map[string][]*corev1.Pod, workloadReplicas int32) map[string]int {
	out := map[string]int{}
	for i := range ws.Spec.Subsets {
		subset := &ws.Spec.Subsets[i]
		max, ok := MaxReplicas(subset, workloadReplicas)
		if !ok {
			continue
		}
		active := activeOf(bySubset[subset.Name])
		sort.SliceStable(active, func(a, b int) bool { return deletedBefore(active[a], active[b]) })
		for j, pod := range active {
			out[pod.Name] = cost(max, len(active), j)
		}
	}
	return out
}

// cost of the pod at rank j (0 deleted first) among n active pods of a subset of max replicas.
func cost(max int32, n, j int) int {
	switch {
	case max == Unlimited:
		return CostUnlimited
	case j < n-int(max):
		return CostSurplus
	default:
		return CostWithin
	}
}

// NeedsCost reports whether the pod's annotation must change to cost. A pod without the annotation already
// weighs 0, as upstream leaves it.
func NeedsCost(pod *corev1.Pod, cost int) bool {
	cur, ok := pod.Annotations[DeletionCostAnnotation]
	if !ok {
		return cost != 0
	}
	return cur != strconv.Itoa(cost)
}

func activeOf(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if Active(p) {
			out = append(out, p)
		}
	}
	return out
}

// deletedBefore orders pods as kube's ActivePods does, in short: unassigned, pending, not ready, newest.
func deletedBefore(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if ra, rb := phaseRank(a.Status.Phase), phaseRank(b.Status.Phase); ra != rb {
		return ra < rb
	}
	if ready(a) != ready(b) {
		return !ready(a)
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}

func phaseRank(p corev1.PodPhase) int {
	switch p {
	case corev1.PodPending:
		return 0
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	}
	return 0
}

func ready(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
