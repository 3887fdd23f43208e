package controller

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/revision"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/plan"
)

var setKind = kruiseappsv1beta1.GroupVersion.WithKind("StatefulSet")

// revisions are the set's update revision (its current template) and current revision (the one its pods
// ran before the update), with the template of every known revision for creating and diffing pods.
type revisions struct {
	update, current *appsv1.ControllerRevision
	templates       map[string]*corev1.PodTemplateSpec
}

// template returns the pod template of a revision, or nil when it is unknown (truncated or foreign).
func (r *revisions) template(name string) *corev1.PodTemplateSpec { return r.templates[name] }

// syncRevisions makes sure a ControllerRevision records the current template, resolves the current revision
// (status.currentRevision, or the update revision when it names none known), and drops history beyond
// spec.revisionHistoryLimit.
func (r *Reconciler) syncRevisions(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world) (*revisions, error) {
	update, err := r.ensureUpdateRevision(ctx, set, w)
	if err != nil {
		return nil, err
	}
	revs := &revisions{update: update, current: update, templates: map[string]*corev1.PodTemplateSpec{update.Name: &set.Spec.Template}}
	for _, cr := range w.revisions {
		if cr.Name == set.Status.CurrentRevision {
			revs.current = cr
		}
		if t, err := revision.TemplateOf(cr); err == nil && cr.Name != update.Name {
			revs.templates[cr.Name] = t
		}
	}
	return revs, r.truncateHistory(ctx, set, w, revs)
}

// ensureUpdateRevision builds the revision of the set's template as upstream does (template patch, template
// labels, the set's annotations, status.collisionCount in the hash) and resolves it against the history.
func (r *Reconciler) ensureUpdateRevision(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world) (*appsv1.ControllerRevision, error) {
	data, err := revision.TemplatePatch(&set.Spec.Template)
	if err != nil {
		return nil, err
	}
	collision := ptr.To(ptr.Deref(set.Status.CollisionCount, 0))
	fresh, err := revision.New(set, setKind, set.Spec.Template.Labels, data, revision.Next(w.revisions), collision)
	if err != nil {
		return nil, err
	}
	u, err := revision.ResolveUpdate(w.revisions, fresh)
	if errors.Is(err, revision.ErrHashCollision) {
		return nil, revision.BumpCollision(ctx, r.Client, setKind.Kind, set, &set.Status.CollisionCount)
	}
	if err != nil {
		return nil, err
	}
	return u.Revision, r.writeRevision(ctx, u, w)
}

// writeRevision creates or renumbers the update revision as resolved; a new one joins the world's.
func (r *Reconciler) writeRevision(ctx context.Context, u revision.Update, w *world) error {
	if err := revision.Write(ctx, r.Client, u); err != nil {
		return err
	}
	if u.Action == revision.Create {
		w.revisions = append(w.revisions, u.Revision)
	}
	return nil
}

// truncateHistory deletes the oldest revisions no pod runs beyond spec.revisionHistoryLimit.
func (r *Reconciler) truncateHistory(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, revs *revisions) error {
	live := sets.New(revs.update.Name, revs.current.Name)
	for _, p := range w.pods {
		live.Insert(plan.Revision(p))
	}
	return revision.Truncate(ctx, r.Client, w.revisions, live, ptr.Deref(set.Spec.RevisionHistoryLimit, 10))
}
