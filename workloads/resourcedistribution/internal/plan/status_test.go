package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func cond(t kruiseappsv1alpha1.ResourceDistributionConditionType, at time.Time, reason string, failed ...string) kruiseappsv1alpha1.ResourceDistributionCondition {
	status := kruiseappsv1alpha1.ResourceDistributionConditionFalse
	if len(failed) > 0 {
		status = kruiseappsv1alpha1.ResourceDistributionConditionTrue
	}
	return kruiseappsv1alpha1.ResourceDistributionCondition{Type: t, Status: status, Reason: reason,
		LastTransitionTime: metav1.NewTime(at), FailedNamespaces: failed}
}

func TestStatusAllSucceeded(t *testing.T) {
	rd := distribution(gameDemo)
	got := Status(rd, []string{"a", "b"}, nil, now)
	want := kruiseappsv1alpha1.ResourceDistributionStatus{Desired: 2, Succeeded: 2, ObservedGeneration: 3}
	for _, ct := range ConditionTypes {
		want.Conditions = append(want.Conditions, cond(ct, now, "Succeeded"))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// Failures: counted once per target namespace (a deletion's not at all), listed sorted under their
// condition, reason the first namespace's; transition times move only with the condition's status.
func TestStatusFailures(t *testing.T) {
	rd := distribution(gameDemo)
	earlier := now.Add(-time.Hour)
	rd.Status.Conditions = []kruiseappsv1alpha1.ResourceDistributionCondition{
		cond(kruiseappsv1alpha1.ResourceDistributionConflictOccurred, earlier, ConflictReason, "c"),
		cond(kruiseappsv1alpha1.ResourceDistributionGetResourceFailed, earlier, "Succeeded"),
		cond(kruiseappsv1alpha1.ResourceDistributionCreateResourceFailed, earlier, "quota", "a"),
	}
	failures := []Failure{
		{"d", kruiseappsv1alpha1.ResourceDistributionConflictOccurred, ConflictReason},
		{"c", kruiseappsv1alpha1.ResourceDistributionConflictOccurred, ConflictReason},
		{"m", kruiseappsv1alpha1.ResourceDistributionNamespaceNotExists, NotExistsReason},
		{"x", kruiseappsv1alpha1.ResourceDistributionUpdateResourceFailed, "boom x"},
		{"b", kruiseappsv1alpha1.ResourceDistributionUpdateResourceFailed, "boom b"},
		{"b", kruiseappsv1alpha1.ResourceDistributionCreateResourceFailed, "also b"},
		{"gone", kruiseappsv1alpha1.ResourceDistributionDeleteResourceFailed, "forbidden"},
	}
	got := Status(rd, []string{"a", "b", "c", "d", "m", "x", "y"}, failures, now)
	want := kruiseappsv1alpha1.ResourceDistributionStatus{Desired: 7, Succeeded: 2, Failed: 5, ObservedGeneration: 3,
		Conditions: []kruiseappsv1alpha1.ResourceDistributionCondition{
			cond(kruiseappsv1alpha1.ResourceDistributionGetResourceFailed, earlier, "Succeeded"),
			cond(kruiseappsv1alpha1.ResourceDistributionCreateResourceFailed, earlier, "also b", "b"),
			cond(kruiseappsv1alpha1.ResourceDistributionUpdateResourceFailed, now, "boom b", "b", "x"),
			cond(kruiseappsv1alpha1.ResourceDistributionDeleteResourceFailed, now, "forbidden", "gone"),
			cond(kruiseappsv1alpha1.ResourceDistributionConflictOccurred, earlier, ConflictReason, "c", "d"),
			cond(kruiseappsv1alpha1.ResourceDistributionNamespaceNotExists, now, NotExistsReason, "m"),
		}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// A resolved failure turns its condition False at once, with a new transition time.
func TestStatusRecovers(t *testing.T) {
	rd := distribution(gameDemo)
	earlier := now.Add(-time.Hour)
	rd.Status.Conditions = []kruiseappsv1alpha1.ResourceDistributionCondition{
		cond(kruiseappsv1alpha1.ResourceDistributionConflictOccurred, earlier, ConflictReason, "c"),
	}
	got := Status(rd, []string{"c"}, nil, now)
	if c := find(got.Conditions, kruiseappsv1alpha1.ResourceDistributionConflictOccurred); c == nil ||
		c.Status != kruiseappsv1alpha1.ResourceDistributionConditionFalse || !c.LastTransitionTime.Time.Equal(now) || len(c.FailedNamespaces) > 0 {
		t.Errorf("conflict condition %+v", c)
	}
	if got.Succeeded != 1 || got.Failed != 0 {
		t.Errorf("counts %+v", got)
	}
}
