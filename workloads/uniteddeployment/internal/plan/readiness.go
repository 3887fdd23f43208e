package plan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// The conditions Flotilla adds to a UnitedDeployment beside upstream's four, in the types kstatus reads, so
// that Flux and Helm's --wait tell a UnitedDeployment still rolling from one that is done or stuck.
const (
	ConditionReady       kruiseappsv1alpha1.UnitedDeploymentConditionType = "Ready"
	ConditionReconciling kruiseappsv1alpha1.UnitedDeploymentConditionType = "Reconciling"
	ConditionStalled     kruiseappsv1alpha1.UnitedDeploymentConditionType = "Stalled"
)

// settled: every subset has its workload, every pod exists and is ready, and every pod the partitions let
// through runs the newest revision.
func settled(in StatusInput, s *kruiseappsv1alpha1.UnitedDeploymentStatus) bool {
	var want, held int32
	for name, n := range in.Plan.Replicas {
		want, held = want+n, held+in.Plan.Partitions[name]
	}
	return len(in.Plan.Create)+len(in.Plan.Delete) == 0 && s.Replicas == want && s.ReadyReplicas == want &&
		s.UpdatedReadyReplicas >= want-held
}

// readiness are Ready and Reconciling from the status, and Stalled while writing the plan fails.
func readiness(in StatusInput, s *kruiseappsv1alpha1.UnitedDeploymentStatus) []kruiseappsv1alpha1.UnitedDeploymentCondition {
	if settled(in, s) {
		return []kruiseappsv1alpha1.UnitedDeploymentCondition{
			{Type: ConditionReady, Status: corev1.ConditionTrue, Reason: "Available"},
			{Type: ConditionReconciling, Status: corev1.ConditionFalse, Reason: "Available"},
		}
	}
	msg := fmt.Sprintf("%d of %d pods ready, %d updated and ready", s.ReadyReplicas, s.Replicas, s.UpdatedReadyReplicas)
	return []kruiseappsv1alpha1.UnitedDeploymentCondition{
		{Type: ConditionReady, Status: corev1.ConditionFalse, Reason: "Progressing", Message: msg},
		{Type: ConditionReconciling, Status: corev1.ConditionTrue, Reason: "Progressing", Message: msg},
	}
}

// stalled sets Stalled when err keeps the controller from acting on the spec, and removes it otherwise.
func stalled(conds []kruiseappsv1alpha1.UnitedDeploymentCondition, reason string, err error, now metav1.Time) []kruiseappsv1alpha1.UnitedDeploymentCondition {
	if err == nil {
		return without(conds, ConditionStalled)
	}
	return setCondition(conds, kruiseappsv1alpha1.UnitedDeploymentCondition{Type: ConditionStalled, Status: corev1.ConditionTrue,
		Reason: reason, Message: err.Error()}, now)
}

func without(conds []kruiseappsv1alpha1.UnitedDeploymentCondition, t kruiseappsv1alpha1.UnitedDeploymentConditionType) []kruiseappsv1alpha1.UnitedDeploymentCondition {
	out := make([]kruiseappsv1alpha1.UnitedDeploymentCondition, 0, len(conds))
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}
