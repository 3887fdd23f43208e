package plan

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestReadiness(t *testing.T) {
	now := metav1.NewTime(time.Unix(100, 0))
	for _, tc := range []struct {
		name       string
		a, b       Counts
		partitions map[string]int32
		failure    error
		ready      corev1.ConditionStatus
		stalled    bool
	}{
		{name: "all updated and ready", a: Counts{2, 2, 2, 2}, b: Counts{2, 2, 2, 2}, ready: corev1.ConditionTrue},
		{name: "a pod not ready", a: Counts{2, 1, 2, 1}, b: Counts{2, 2, 2, 2}, ready: corev1.ConditionFalse},
		{name: "rolling out", a: Counts{2, 2, 0, 0}, b: Counts{2, 2, 2, 2}, ready: corev1.ConditionFalse},
		{name: "held where the partitions say", a: Counts{2, 2, 0, 0}, b: Counts{2, 2, 1, 1}, partitions: map[string]int32{"a": 2, "b": 1},
			ready: corev1.ConditionTrue},
		{name: "a write fails", a: Counts{2, 2, 2, 2}, b: Counts{2, 2, 2, 2}, failure: errors.New("quota"), ready: corev1.ConditionTrue, stalled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := ud(n(4), sub("a"), sub("b"))
			u.Spec.UpdateStrategy = kruiseappsv1alpha1.UnitedDeploymentUpdateStrategy{Type: kruiseappsv1alpha1.ManualUpdateStrategyType,
				ManualUpdate: &kruiseappsv1alpha1.ManualUpdate{Partitions: tc.partitions}}
			u.Status.Conditions = []kruiseappsv1alpha1.UnitedDeploymentCondition{{Type: ConditionStalled, Status: corev1.ConditionTrue}}
			p, err := Decide(Input{UD: u, Revision: "r1", Owned: []client.Object{existing(t, u, "a", "r1", tc.a), existing(t, u, "b", "r1", tc.b)}})
			if err != nil {
				t.Fatal(err)
			}
			byType := conditionMap(Status(StatusInput{UD: u, Plan: p, Revision: "r1", Failure: tc.failure, Now: now}))
			reconciling := corev1.ConditionTrue
			if tc.ready == corev1.ConditionTrue {
				reconciling = corev1.ConditionFalse
			}
			if byType[ConditionReady].Status != tc.ready || byType[ConditionReconciling].Status != reconciling {
				t.Errorf("Ready %+v Reconciling %+v", byType[ConditionReady], byType[ConditionReconciling])
			}
			if _, got := byType[ConditionStalled]; got != tc.stalled {
				t.Errorf("Stalled %+v, want present %v", byType[ConditionStalled], tc.stalled)
			}
		})
	}
}

func TestInvalidStalls(t *testing.T) {
	u := ud(n(4), sub("a"))
	u.Status.ObservedGeneration = 2
	s := Invalid(u.Status, errors.New("bad"), metav1.NewTime(time.Unix(1, 0)))
	byType := conditionMap(s)
	if byType[ConditionStalled].Reason != "InvalidSpec" || byType[kruiseappsv1alpha1.SubsetFailure].Message != "bad" || s.ObservedGeneration != 2 {
		t.Errorf("status %+v", s)
	}
}
