package plan

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Reconciled reports whether the status describes the current spec: the controller observed this generation
// and the status has an entry per subset. Before that, missingReplicas cannot be trusted.
func Reconciled(ws *kruiseappsv1alpha1.WorkloadSpread) bool {
	if ws.Status.ObservedGeneration != ws.Generation {
		return false
	}
	for i := range ws.Spec.Subsets {
		if subsetStatus(&ws.Status, ws.Spec.Subsets[i].Name) == nil {
			return false
		}
	}
	return true
}

// Choose returns the subset a new pod joins: the first in spec order that has room (missingReplicas above 0,
// or Unlimited) and that the controller has not marked unschedulable. ok is false when every subset is
// full: the pod is then left as its workload made it, as upstream does.
func Choose(ws *kruiseappsv1alpha1.WorkloadSpread) (*kruiseappsv1alpha1.WorkloadSpreadSubset, bool) {
	for i := range ws.Spec.Subsets {
		s := subsetStatus(&ws.Status, ws.Spec.Subsets[i].Name)
		if s != nil && s.MissingReplicas != 0 && !Unschedulable(s) {
			return &ws.Spec.Subsets[i], true
		}
	}
	return nil, false
}

// Admit records a pod joining the subset named subset: creatingPods[key] at now, and one replica fewer
// missing. It reports false when the subset has no room left (another pod took it since Choose).
func Admit(status *kruiseappsv1alpha1.WorkloadSpreadStatus, subset, key string, now metav1.Time) bool {
	s := subsetStatus(status, subset)
	if s == nil || s.MissingReplicas == 0 {
		return false
	}
	if s.MissingReplicas > 0 {
		s.MissingReplicas--
	}
	if s.CreatingPods == nil {
		s.CreatingPods = map[string]metav1.Time{}
	}
	s.CreatingPods[key] = now
	return true
}

// Release records the deletion of a pod of the subset named subset: deletingPods[pod] at now, and one
// replica more missing for a limited subset, so the workload's replacement may take the room at once. It
// reports false when there is nothing to record: an unknown subset, or a deletion recorded already.
func Release(status *kruiseappsv1alpha1.WorkloadSpreadStatus, subset, pod string, now metav1.Time) bool {
	s := subsetStatus(status, subset)
	if s == nil {
		return false
	}
	if _, done := s.DeletingPods[pod]; done {
		return false
	}
	if s.MissingReplicas >= 0 {
		s.MissingReplicas++
	}
	if s.DeletingPods == nil {
		s.DeletingPods = map[string]metav1.Time{}
	}
	s.DeletingPods[pod] = now
	return true
}
