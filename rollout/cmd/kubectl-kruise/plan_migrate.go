package main

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// cloneSetFromDeployment is the CloneSet `migrate --create` makes: the Deployment's metadata, selector and
// template, recreating paused updates (the pods must not change while they move over), and no replicas
// unless they are copied.
func cloneSetFromDeployment(d *appsv1.Deployment, name string, copyReplicas bool) *kruiseappsv1alpha1.CloneSet {
	cs := &kruiseappsv1alpha1.CloneSet{
		TypeMeta: metav1.TypeMeta{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: "CloneSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: d.Namespace, Labels: d.Labels, Annotations: migratedAnnotations(d.Annotations), Finalizers: d.Finalizers,
		},
		Spec: kruiseappsv1alpha1.CloneSetSpec{
			Replicas: new(int32), Selector: d.Spec.Selector, Template: d.Spec.Template,
			MinReadySeconds: d.Spec.MinReadySeconds, RevisionHistoryLimit: d.Spec.RevisionHistoryLimit,
			UpdateStrategy: kruiseappsv1alpha1.CloneSetUpdateStrategy{Type: kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType, Paused: true},
		},
	}
	if copyReplicas {
		*cs.Spec.Replicas = replicasOf(d.Spec.Replicas)
	}
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		cs.Spec.UpdateStrategy.MaxUnavailable, cs.Spec.UpdateStrategy.MaxSurge = ru.MaxUnavailable, ru.MaxSurge
	}
	return cs
}

// migratedAnnotations drops the Deployment controller's revision bookkeeping, meaningless on a CloneSet.
func migratedAnnotations(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if k != deploymentRevisionAnnotation {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// migration is where a replica migration stands: the counts at its start, the goal, and what was read now.
type migration struct {
	// Goal is how many replicas move from the Deployment to the CloneSet.
	Goal, MaxSurge                      int32
	CloneSetStart, DeploymentStart      int32
	CloneSetReplicas, CloneSetAvailable int32
	DeploymentReplicas                  int32
}

// migrationAction is the next write of a migration.
type migrationAction int

const (
	migrateWait migrationAction = iota
	migrateScaleCloneSet
	migrateScaleDeployment
	migrateDone
)

// migrationStep is one action and the replicas it sets.
type migrationStep struct {
	Action   migrationAction
	Replicas int32
}

// nextMigrationStep alternates: once every CloneSet replica is available, the Deployment gives up as
// many as the CloneSet gained, then the CloneSet grows by at most MaxSurge. The total never exceeds the
// start by more than MaxSurge, and never drops below it while CloneSet pods are unavailable.
func nextMigrationStep(m migration) migrationStep {
	moved := m.CloneSetReplicas - m.CloneSetStart
	shrunk := m.DeploymentStart - m.DeploymentReplicas
	switch {
	case m.CloneSetAvailable < m.CloneSetReplicas:
		return migrationStep{Action: migrateWait}
	case shrunk < moved:
		return migrationStep{Action: migrateScaleDeployment, Replicas: m.DeploymentStart - moved}
	case moved < m.Goal:
		return migrationStep{Action: migrateScaleCloneSet, Replicas: m.CloneSetReplicas + min(max(m.MaxSurge, 1), m.Goal-moved)}
	}
	return migrationStep{Action: migrateDone}
}
