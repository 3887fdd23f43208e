package plan

import (
	"cmp"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// SucceededReason is the reason of a condition that holds no failure (upstream's).
const SucceededReason = "Succeeded"

// ConditionTypes are upstream's six conditions, in the order its status lists them; every status has all six.
var ConditionTypes = []kruiseappsv1alpha1.ResourceDistributionConditionType{
	kruiseappsv1alpha1.ResourceDistributionGetResourceFailed,
	kruiseappsv1alpha1.ResourceDistributionCreateResourceFailed,
	kruiseappsv1alpha1.ResourceDistributionUpdateResourceFailed,
	kruiseappsv1alpha1.ResourceDistributionDeleteResourceFailed,
	kruiseappsv1alpha1.ResourceDistributionConflictOccurred,
	kruiseappsv1alpha1.ResourceDistributionNamespaceNotExists,
}

// Status is the status of rd after a reconcile of its targets (desired of them) that met failures: the
// counts (a target namespace with any failure but a deletion's is failed), the generation it acted on and
// the six conditions. A condition with failures is True, its reason the failure of its first namespace (in
// name order), its failedNamespace list sorted; one without is False with reason Succeeded. A condition's
// lastTransitionTime is now when its status changed, else kept.
func Status(rd *kruiseappsv1alpha1.ResourceDistribution, targets []string, failures []Failure, now time.Time) kruiseappsv1alpha1.ResourceDistributionStatus {
	desired := int32(len(targets))
	failed := failedTargets(targets, failures)
	s := kruiseappsv1alpha1.ResourceDistributionStatus{
		Desired: desired, Succeeded: desired - failed, Failed: failed, ObservedGeneration: rd.Generation,
	}
	for _, t := range ConditionTypes {
		s.Conditions = append(s.Conditions, condition(rd.Status.Conditions, t, failures, now))
	}
	return s
}

func failedTargets(targets []string, failures []Failure) int32 {
	failed := map[string]bool{}
	for _, f := range failures {
		if f.Type != kruiseappsv1alpha1.ResourceDistributionDeleteResourceFailed && slices.Contains(targets, f.Namespace) {
			failed[f.Namespace] = true
		}
	}
	return int32(len(failed))
}

func condition(old []kruiseappsv1alpha1.ResourceDistributionCondition, t kruiseappsv1alpha1.ResourceDistributionConditionType,
	failures []Failure, now time.Time) kruiseappsv1alpha1.ResourceDistributionCondition {
	c := kruiseappsv1alpha1.ResourceDistributionCondition{Type: t, Status: kruiseappsv1alpha1.ResourceDistributionConditionFalse, Reason: SucceededReason}
	mine := slices.DeleteFunc(slices.Clone(failures), func(f Failure) bool { return f.Type != t })
	slices.SortFunc(mine, func(a, b Failure) int { return cmp.Compare(a.Namespace, b.Namespace) })
	for _, f := range mine {
		c.FailedNamespaces = append(c.FailedNamespaces, f.Namespace)
	}
	if len(mine) > 0 {
		c.Status, c.Reason = kruiseappsv1alpha1.ResourceDistributionConditionTrue, mine[0].Reason
	}
	c.LastTransitionTime = metav1.NewTime(now).Rfc3339Copy()
	if prev := find(old, t); prev != nil && prev.Status == c.Status {
		c.LastTransitionTime = prev.LastTransitionTime
	}
	return c
}

func find(conds []kruiseappsv1alpha1.ResourceDistributionCondition, t kruiseappsv1alpha1.ResourceDistributionConditionType) *kruiseappsv1alpha1.ResourceDistributionCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
