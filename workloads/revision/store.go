package revision

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Write creates or renumbers the update revision as ResolveUpdate resolved it.
func Write(ctx context.Context, c client.Client, u Update) error {
	switch u.Action {
	case Create:
		if err := c.Create(ctx, u.Revision); err != nil {
			return fmt.Errorf("create revision %s: %w", u.Revision.Name, err)
		}
	case Renumber:
		if err := c.Update(ctx, u.Revision); err != nil {
			return fmt.Errorf("renumber revision %s: %w", u.Revision.Name, err)
		}
	}
	return nil
}

// BumpCollision raises the workload's status.collisionCount, which count points into, so that the next attempt
// hashes to another name, and returns the error that has the caller try again.
func BumpCollision(ctx context.Context, c client.Client, kind string, obj client.Object, count **int32) error {
	base := obj.DeepCopyObject().(client.Object)
	*count = ptr.To(ptr.Deref(*count, 0) + 1)
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("raise collisionCount: %w", err)
	}
	return fmt.Errorf("revision name collision for %s %s/%s, collisionCount raised to %d", kind, obj.GetNamespace(), obj.GetName(), **count)
}

// Truncate deletes what ToTruncate picks: the oldest revisions no one runs, beyond limit. Each delete names
// the revision read (its UID), never one made since under the same name.
func Truncate(ctx context.Context, c client.Client, revisions []*appsv1.ControllerRevision, live sets.Set[string], limit int32) error {
	for _, cr := range ToTruncate(revisions, live, limit) {
		if err := c.Delete(ctx, cr, client.Preconditions{UID: &cr.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete revision %s: %w", cr.Name, err)
		}
	}
	return nil
}
