package controller

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// A failed pod creation sets FailedCreatePod, a failed update FailedUpdatePod; the same failure again keeps the
// condition's time, another message replaces it, and a step without error removes it.
func TestFailureConditions(t *testing.T) {
	t0, t1 := time.Unix(100, 0), time.Unix(200, 0)
	s := &kruiseappsv1beta1.StatefulSetStatus{}
	createErr, updateErr := splitFailure(failedAs(kruiseappsv1beta1.FailedCreatePod, errors.New("quota exceeded")))
	if createErr == nil || updateErr != nil {
		t.Fatalf("a create failure split into %v and %v", createErr, updateErr)
	}
	if _, u := splitFailure(failedAs(kruiseappsv1beta1.FailedUpdatePod, errors.New("x"))); u == nil {
		t.Fatal("an update failure is not FailedUpdatePod's")
	}
	setFailure(s, kruiseappsv1beta1.FailedCreatePod, createErr, t0)
	setFailure(s, kruiseappsv1beta1.FailedCreatePod, createErr, t1)
	want := appsv1.StatefulSetCondition{Type: kruiseappsv1beta1.FailedCreatePod, Status: corev1.ConditionTrue, Message: "quota exceeded"}
	if len(s.Conditions) != 1 || s.Conditions[0].Type != want.Type || s.Conditions[0].Status != want.Status ||
		s.Conditions[0].Message != want.Message || !s.Conditions[0].LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("conditions %+v", s.Conditions)
	}
	setFailure(s, kruiseappsv1beta1.FailedCreatePod, errors.New("forbidden"), t1)
	if s.Conditions[0].Message != "forbidden" || !s.Conditions[0].LastTransitionTime.Time.Equal(t1) {
		t.Errorf("another failure gave %+v", s.Conditions[0])
	}
	setFailure(s, kruiseappsv1beta1.FailedUpdatePod, nil, t1)
	setFailure(s, kruiseappsv1beta1.FailedCreatePod, nil, t1)
	if len(s.Conditions) != 0 {
		t.Errorf("conditions %+v after steps without error", s.Conditions)
	}
}
