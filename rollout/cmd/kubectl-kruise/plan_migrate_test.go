package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestCloneSetFromDeployment(t *testing.T) {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "apps", Labels: map[string]string{"app": "web"}, Finalizers: []string{"keep"},
			Annotations: map[string]string{"team": "a", "deployment.kubernetes.io/revision": "3"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](4), Selector: testSelector, Template: testTemplate(), MinReadySeconds: 5,
			RevisionHistoryLimit: ptr.To[int32](2),
			Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromString("25%"))}}},
	}
	want := kruiseappsv1alpha1.CloneSetSpec{
		Replicas: ptr.To[int32](0), Selector: testSelector, Template: testTemplate(), MinReadySeconds: 5, RevisionHistoryLimit: ptr.To[int32](2),
		UpdateStrategy: kruiseappsv1alpha1.CloneSetUpdateStrategy{Type: kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType, Paused: true,
			MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromString("25%"))},
	}
	cs := cloneSetFromDeployment(d, "web", false)
	if diff := cmp.Diff(want, cs.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	wantMeta := metav1.ObjectMeta{Name: "web", Namespace: "apps", Labels: d.Labels, Finalizers: d.Finalizers, Annotations: map[string]string{"team": "a"}}
	if diff := cmp.Diff(wantMeta, cs.ObjectMeta); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if got := *cloneSetFromDeployment(d, "web", true).Spec.Replicas; got != 4 {
		t.Errorf("copied replicas = %d, want 4", got)
	}
}

func TestNextMigrationStep(t *testing.T) {
	base := migration{Goal: 3, MaxSurge: 2, CloneSetStart: 1, DeploymentStart: 3}
	at := func(cs, available, deploy int32) migration {
		m := base
		m.CloneSetReplicas, m.CloneSetAvailable, m.DeploymentReplicas = cs, available, deploy
		return m
	}
	tests := []struct {
		name string
		m    migration
		want migrationStep
	}{
		{"start: grow the CloneSet by max-surge", at(1, 1, 3), migrationStep{migrateScaleCloneSet, 3}},
		{"wait for the new pods", at(3, 2, 3), migrationStep{Action: migrateWait}},
		{"available: shrink the Deployment as much", at(3, 3, 3), migrationStep{migrateScaleDeployment, 1}},
		{"last step is bounded by the goal", at(3, 3, 1), migrationStep{migrateScaleCloneSet, 4}},
		{"then the Deployment follows", at(4, 4, 1), migrationStep{migrateScaleDeployment, 0}},
		{"done", at(4, 4, 0), migrationStep{Action: migrateDone}},
		{"nothing to move", migration{MaxSurge: 1}, migrationStep{Action: migrateDone}},
		{"a max-surge of 0 still moves", migration{Goal: 1}, migrationStep{migrateScaleCloneSet, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextMigrationStep(tt.m); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
