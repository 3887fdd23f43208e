package controller

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	"github.com/flotilla-dev/flotilla/sidecarset/internal/history"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/revision"
)

// defaultHistoryLimit is upstream's default revisionHistoryLimit.
const defaultHistoryLimit = 10

// syncRevisions makes sure a revision records the SidecarSet's sidecars, prunes the history beyond
// revisionHistoryLimit, and returns the latest revision's name.
func (r *Reconciler) syncRevisions(ctx context.Context, set *kruiseappsv1alpha1.SidecarSet, pods []*corev1.Pod) (string, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(r.Namespace),
		client.MatchingLabelsSelector{Selector: history.Selector(set.Name)}); err != nil {
		return "", fmt.Errorf("listing revisions: %w", err)
	}
	existing := owned(list.Items, set)
	latest, err := r.latestRevision(ctx, set, existing)
	if err != nil {
		return "", err
	}
	limit := ptr.Deref(set.Spec.RevisionHistoryLimit, defaultHistoryLimit)
	return latest, revision.Truncate(ctx, r.Client, existing, liveRevisions(set, latest, pods), limit)
}

// latestRevision creates the revision of the current sidecars, or renumbers an older one that records
// them (a rollback), and returns its name.
func (r *Reconciler) latestRevision(ctx context.Context, set *kruiseappsv1alpha1.SidecarSet, existing []*appsv1.ControllerRevision) (string, error) {
	fresh, err := history.New(set, r.Namespace, revision.Next(existing), set.Status.CollisionCount)
	if err != nil {
		return "", err
	}
	u, err := revision.ResolveUpdate(existing, fresh)
	if errors.Is(err, revision.ErrHashCollision) {
		return "", r.bumpCollisionCount(ctx, set)
	}
	if err != nil {
		return "", err
	}
	switch u.Action {
	case revision.Create:
		err = r.Client.Create(ctx, u.Revision)
	case revision.Renumber:
		err = r.Client.Update(ctx, u.Revision)
	}
	if err != nil {
		return "", fmt.Errorf("writing revision %s: %w", u.Revision.Name, err)
	}
	return u.Revision.Name, nil
}

// bumpCollisionCount moves the next revision's name away from a revision of the same hash recording
// other sidecars; the conflict it returns makes the reconcile run again with the new count.
func (r *Reconciler) bumpCollisionCount(ctx context.Context, set *kruiseappsv1alpha1.SidecarSet) error {
	next := set.DeepCopy()
	next.Status.CollisionCount = ptr.To(ptr.Deref(set.Status.CollisionCount, 0) + 1)
	if err := r.Client.Status().Patch(ctx, next, client.MergeFromWithOptions(set, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("bumping the collision count: %w", err)
	}
	return fmt.Errorf("revision name collision for SidecarSet %s: %w", set.Name, errConflict)
}

// errConflict marks a reconcile to run again at once.
var errConflict = errors.New("retry")

// owned are the revisions set controls (a SidecarSet re-created under the same name does not inherit the
// old one's).
func owned(items []appsv1.ControllerRevision, set *kruiseappsv1alpha1.SidecarSet) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for i := range items {
		for _, ref := range items[i].OwnerReferences {
			if ref.Controller != nil && *ref.Controller && ref.UID == set.UID {
				out = append(out, &items[i])
			}
		}
	}
	return out
}

// liveRevisions are those history must keep: the latest, the one injection is pinned to, and every one a
// pod's sidecars were injected or updated from.
func liveRevisions(set *kruiseappsv1alpha1.SidecarSet, latest string, pods []*corev1.Pod) sets.Set[string] {
	live := sets.New(latest)
	if rev := set.Spec.InjectionStrategy.Revision; rev != nil && rev.RevisionName != nil {
		live.Insert(*rev.RevisionName)
	}
	for _, p := range pods {
		if r := inject.PodControllerRevision(p, set.Name); r != "" {
			live.Insert(r)
		}
	}
	return live
}
