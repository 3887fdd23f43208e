package controller

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/revision"
	"github.com/flotilla-dev/flotilla/workloads/uniteddeployment/internal/plan"
)

// maxCollisions bounds the collision counts one reconcile tries before it gives up.
const maxCollisions = 10

var unitedDeploymentKind = kruiseappsv1alpha1.GroupVersion.WithKind("UnitedDeployment")

// revisionState is the UnitedDeployment's newest revision and the collision count its name was hashed with.
type revisionState struct {
	update         string
	collisionCount *int32
}

// syncRevisions makes sure a ControllerRevision records the current template, and drops history beyond
// revisionHistoryLimit. A name taken by other data raises the collision count (written with the status).
func (r *Reconciler) syncRevisions(ctx context.Context, ud *kruiseappsv1alpha1.UnitedDeployment) (revisionState, error) {
	existing, err := r.revisionsOf(ctx, ud)
	if err != nil {
		return revisionState{}, err
	}
	data, err := plan.RevisionData(ud)
	if err != nil {
		return revisionState{}, err
	}
	count := ptr.Deref(ud.Status.CollisionCount, 0)
	for range maxCollisions {
		fresh, err := revision.New(ud, unitedDeploymentKind, labelsOf(ud), data, revision.Next(existing), ptr.To(count))
		if err != nil {
			return revisionState{}, err
		}
		u, err := revision.ResolveUpdate(existing, fresh)
		if errors.Is(err, revision.ErrHashCollision) {
			count++
			continue
		}
		if err != nil {
			return revisionState{}, err
		}
		if err := r.writeRevision(ctx, u); err != nil {
			return revisionState{}, err
		}
		state := revisionState{update: u.Revision.Name, collisionCount: collisions(ud, count)}
		return state, r.truncateHistory(ctx, ud, append(existing, u.Revision), state)
	}
	return revisionState{}, fmt.Errorf("revision names collide %d times in a row", maxCollisions)
}

// collisions is the count to report: unset as long as it is unset and 0.
func collisions(ud *kruiseappsv1alpha1.UnitedDeployment, count int32) *int32 {
	if ud.Status.CollisionCount == nil && count == 0 {
		return nil
	}
	return ptr.To(count)
}

// labelsOf are the labels upstream gives a revision: the workload template's, except a CloneSet template's
// (none). They are not hashed.
func labelsOf(ud *kruiseappsv1alpha1.UnitedDeployment) map[string]string {
	t := ud.Spec.Template
	switch {
	case t.StatefulSetTemplate != nil:
		return t.StatefulSetTemplate.Labels
	case t.AdvancedStatefulSetTemplate != nil:
		return t.AdvancedStatefulSetTemplate.Labels
	case t.DeploymentTemplate != nil:
		return t.DeploymentTemplate.Labels
	}
	return nil
}

// writeRevision creates or renumbers the update revision as resolved. One that already exists was created
// by an earlier reconcile the cache does not show yet.
func (r *Reconciler) writeRevision(ctx context.Context, u revision.Update) error {
	if err := revision.Write(ctx, r.Client, u); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// truncateHistory deletes the oldest revisions beyond spec.revisionHistoryLimit, never the current or the
// newest one.
func (r *Reconciler) truncateHistory(ctx context.Context, ud *kruiseappsv1alpha1.UnitedDeployment, revs []*appsv1.ControllerRevision, s revisionState) error {
	live := sets.New(s.update, ud.Status.CurrentRevision)
	return revision.Truncate(ctx, r.Client, revs, live, ptr.Deref(ud.Spec.RevisionHistoryLimit, 10))
}
