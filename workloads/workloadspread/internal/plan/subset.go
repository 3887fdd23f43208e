package plan

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Unlimited is the missingReplicas (and resolved maxReplicas) of a subset without maxReplicas, as upstream.
const Unlimited int32 = -1

// MaxReplicas resolves a subset's maxReplicas against the workload's replicas, rounding a percentage up as
// upstream does; a subset without maxReplicas has Unlimited. ok is false for a value validation refuses.
func MaxReplicas(s *kruiseappsv1alpha1.WorkloadSpreadSubset, workloadReplicas int32) (int32, bool) {
	if s.MaxReplicas == nil {
		return Unlimited, true
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(s.MaxReplicas, int(workloadReplicas), true)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}

// Matched is the pod annotation apps.kruise.io/matched-workloadspread, with upstream's keys: UID identifies
// a pod the webhook saw without a name (generateName), in creatingPods.
type Matched struct {
	Name   string `json:"name"`
	Subset string `json:"subset"`
	UID    string `json:"uid,omitempty"`
}

// MatchedOf reads the pod's annotation; ok is false without one or with one that does not parse.
func MatchedOf(pod *corev1.Pod) (Matched, bool) {
	raw, ok := pod.Annotations[kruiseappsv1alpha1.MatchedWorkloadSpreadSubsetAnnotations]
	if !ok {
		return Matched{}, false
	}
	var m Matched
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m.Name == "" {
		return Matched{}, false
	}
	return m, true
}

// key is how creatingPods names the pod: its generated UID, else its name.
func (m Matched) key(pod *corev1.Pod) string {
	if m.UID != "" {
		return m.UID
	}
	return pod.Name
}

// subsetStatus returns the status entry of the subset named name, nil when the status has none.
func subsetStatus(status *kruiseappsv1alpha1.WorkloadSpreadStatus, name string) *kruiseappsv1alpha1.WorkloadSpreadSubsetStatus {
	for i := range status.SubsetStatuses {
		if status.SubsetStatuses[i].Name == name {
			return &status.SubsetStatuses[i]
		}
	}
	return nil
}

// Unschedulable reports whether the controller marked the subset Schedulable=False (Adaptive strategy).
func Unschedulable(s *kruiseappsv1alpha1.WorkloadSpreadSubsetStatus) bool {
	for _, c := range s.Conditions {
		if c.Type == kruiseappsv1alpha1.SubsetSchedulable && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	return false
}
