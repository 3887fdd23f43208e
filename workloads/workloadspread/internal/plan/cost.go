package plan

import (
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// DeletionCostAnnotation is the annotation ReplicaSets and CloneSets read to choose which pod to delete
// first on scale-down: the lowest cost goes first.
const DeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// costStep is upstream's unit of deletion cost.
const costStep = 100

// costReaders are the target kinds whose controllers read deletion costs; as upstream, costs are set on their
// pods only, since for a Job or a StatefulSet they would be writes nobody reads.
var costReaders = []schema.GroupKind{
	{Group: "apps", Kind: "ReplicaSet"}, {Group: "apps", Kind: "Deployment"}, {Group: "apps.kruise.io", Kind: "CloneSet"},
}

// ReadsCosts says whether the controller of a target of this kind reads its pods' deletion costs.
func ReadsCosts(gk schema.GroupKind) bool {
	for _, k := range costReaders {
		if k == gk {
			return true
		}
	}
	return false
}

// DeletionCosts are the costs wanted on the target's active pods, by pod name, as upstream sets them: the pods
// a subset at index i of n keeps (all of them without maxReplicas, else maxReplicas of them) cost 100×(n−i), its
// surplus −100×(i+1), and pods in no subset −100×(n+1). So a scale-down takes pods in no subset first, then
// the surplus of the subsets from the first, then the subsets from the last. The surplus is chosen as kube's
// ReplicaSet controller would delete pods (unscheduled, then pending, then not ready, then the newest). A
// subset whose maxReplicas cannot be read is left out.
func DeletionCosts(ws *kruiseappsv1alpha1.WorkloadSpread, pods []*corev1.Pod, workloadReplicas int32) map[string]int {
	out := map[string]int{}
	n := len(ws.Spec.Subsets)
	bySubset := BySubset(ws, pods)
	for i := range ws.Spec.Subsets {
		subset := &ws.Spec.Subsets[i]
		max, ok := MaxReplicas(subset, workloadReplicas)
		if !ok {
			continue
		}
		active := activeOf(bySubset[subset.Name])
		sort.SliceStable(active, func(a, b int) bool { return deletedBefore(active[a], active[b]) })
		for j, pod := range active {
			out[pod.Name] = cost(i, n, max, len(active)-j)
		}
	}
	for _, pod := range activeOf(unplaced(pods, bySubset)) {
		out[pod.Name] = -costStep * (n + 1)
	}
	return out
}

// cost of a pod of the subset at index i of n, of max replicas, that is the k-th last its subset would lose.
func cost(i, n int, max int32, k int) int {
	if max != Unlimited && k > int(max) {
		return -costStep * (i + 1)
	}
	return costStep * (n - i)
}

// unplaced are the pods in none of the subsets.
func unplaced(pods []*corev1.Pod, bySubset map[string][]*corev1.Pod) []*corev1.Pod {
	placed := map[*corev1.Pod]bool{}
	for _, in := range bySubset {
		for _, p := range in {
			placed[p] = true
		}
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if !placed[p] {
			out = append(out, p)
		}
	}
	return out
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
