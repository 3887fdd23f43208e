package controller

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/revision"
)

// revisions are the CloneSet's update revision (its current template) and current revision (the one
// before the update), with the templates of every known revision for creating and diffing pods.
type revisions struct {
	update, current *appsv1.ControllerRevision
	templates       map[string]*corev1.PodTemplateSpec
	// annotations of every known revision, by name (the volumeClaimTemplates hash among them).
	annotations map[string]map[string]string
}

// template returns the pod template of a revision, or nil when it is unknown (truncated or foreign).
func (r *revisions) template(name string) *corev1.PodTemplateSpec { return r.templates[name] }

// vctAllowsInPlace reports whether a pod of revision name may be updated in place as far as the
// volumeClaimTemplates are concerned (plan.VCTAllowsInPlace).
func (r *revisions) vctAllowsInPlace(name string) bool {
	return plan.VCTAllowsInPlace(r.annotations[name], r.update.Annotations)
}

var cloneSetKind = kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet")

// syncRevisions makes sure a ControllerRevision records the current template, resolves the current
// revision, and drops history beyond revisionHistoryLimit.
func (r *Reconciler) syncRevisions(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world) (*revisions, error) {
	update, err := r.ensureUpdateRevision(ctx, cs, w)
	if err != nil {
		return nil, err
	}
	revs := &revisions{update: update, current: update, templates: map[string]*corev1.PodTemplateSpec{update.Name: &cs.Spec.Template},
		annotations: map[string]map[string]string{}}
	for _, cr := range w.revisions {
		if cr.Name == cs.Status.CurrentRevision {
			revs.current = cr
		}
		revs.annotations[cr.Name] = cr.Annotations
		if t, err := revision.TemplateOf(cr); err == nil && cr.Name != update.Name {
			revs.templates[cr.Name] = t
		}
	}
	return revs, r.truncateHistory(ctx, cs, w, revs)
}

func (r *Reconciler) ensureUpdateRevision(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world) (*appsv1.ControllerRevision, error) {
	data, err := revision.TemplatePatch(&cs.Spec.Template)
	if err != nil {
		return nil, err
	}
	collision := ptr.To(ptr.Deref(cs.Status.CollisionCount, 0))
	fresh, err := revision.New(cs, cloneSetKind, cs.Spec.Template.Labels, data, revision.Next(w.revisions), collision)
	if err != nil {
		return nil, err
	}
	if fresh.Annotations == nil {
		fresh.Annotations = map[string]string{}
	}
	fresh.Annotations[plan.VCTHashAnnotation] = plan.VCTHash(cs.Spec.VolumeClaimTemplates)
	u, err := revision.ResolveUpdate(w.revisions, fresh)
	if errors.Is(err, revision.ErrHashCollision) {
		return nil, revision.BumpCollision(ctx, r.Client, cloneSetKind.Kind, cs, &cs.Status.CollisionCount)
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
func (r *Reconciler) truncateHistory(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, revs *revisions) error {
	live := sets.New(revs.update.Name, revs.current.Name)
	for _, p := range w.pods {
		live.Insert(plan.Revision(p))
	}
	return revision.Truncate(ctx, r.Client, w.revisions, live, ptr.Deref(cs.Spec.RevisionHistoryLimit, 10))
}
