package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/daemonset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/revision"
)

// revisions are the DaemonSet's ControllerRevisions: the update revision (its current template) and the
// templates of every known revision by hash, for in-place updates.
type revisions struct {
	update    *appsv1.ControllerRevision
	hash      string
	all       []*appsv1.ControllerRevision
	templates map[string]*corev1.PodTemplateSpec
}

// syncRevisions makes sure a ControllerRevision records the current template, as upstream does: an existing
// revision with the same data is the update revision whatever its name (so the pods of a DaemonSet migrated
// from upstream keep their hash), else a new one is named after the template hash.
func (r *Reconciler) syncRevisions(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet) (*revisions, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ds.Namespace)); err != nil {
		return nil, fmt.Errorf("list revisions: %w", err)
	}
	existing := controlled(ds, list.Items)
	data, err := revision.TemplatePatch(&ds.Spec.Template)
	if err != nil {
		return nil, err
	}
	hash := revision.TemplateHash(&ds.Spec.Template, ds.Status.CollisionCount)
	fresh, err := revision.NewHashed(ds, plan.Kind, ds.Spec.Template.Labels, data, revision.Next(existing), plan.HashLabel, hash)
	if err != nil {
		return nil, err
	}
	u, err := revision.ResolveUpdate(existing, fresh)
	if errors.Is(err, revision.ErrHashCollision) {
		return nil, revision.BumpCollision(ctx, r.Client, "DaemonSet", ds, &ds.Status.CollisionCount)
	}
	if err != nil {
		return nil, err
	}
	if err := revision.Write(ctx, r.Client, u); err != nil {
		return nil, err
	}
	if u.Action == revision.Create {
		existing = append(existing, u.Revision)
	}
	return newRevisions(u.Revision, existing), nil
}

func newRevisions(update *appsv1.ControllerRevision, all []*appsv1.ControllerRevision) *revisions {
	revs := &revisions{update: update, hash: hashOf(update), all: all, templates: map[string]*corev1.PodTemplateSpec{}}
	for _, cr := range all {
		if t, err := templateOf(cr); err == nil {
			revs.templates[hashOf(cr)] = t
		}
	}
	return revs
}

// hashOf is a revision's controller-revision-hash: its label, or the end of its name for one written without.
func hashOf(cr *appsv1.ControllerRevision) string {
	if h := cr.Labels[plan.HashLabel]; h != "" {
		return h
	}
	return cr.Name[strings.LastIndex(cr.Name, "-")+1:]
}

// truncateHistory deletes the oldest revisions no pod runs beyond spec.revisionHistoryLimit.
func (r *Reconciler) truncateHistory(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, w *world) error {
	live := sets.New(w.revs.update.Name)
	for _, p := range w.pods {
		if h := p.Labels[plan.HashLabel]; h != "" {
			live.Insert(h)
		}
	}
	return revision.Truncate(ctx, r.Client, w.revs.all, live, ptr.Deref(ds.Spec.RevisionHistoryLimit, 10))
}

// templateOf decodes the pod template a revision records ({"spec":{"template":{...}}}).
func templateOf(cr *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var data struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(cr.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("decode revision %s: %w", cr.Name, err)
	}
	return &data.Spec.Template, nil
}
