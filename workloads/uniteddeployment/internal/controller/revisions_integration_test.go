package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// revisionNames are the names of the namespace's ControllerRevisions, oldest revision number first.
func revisionNames(ctx context.Context, c client.Client, ns string) ([]string, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b appsv1.ControllerRevision) int { return int(a.Revision - b.Revision) })
	var out []string
	for _, cr := range list.Items {
		out = append(out, cr.Name)
	}
	return out, nil
}

// Each template gets a revision; history beyond revisionHistoryLimit goes, never the current revision; going
// back to an earlier template reuses its revision under a new number.
func TestRevisionHistory(t *testing.T) {
	t.Parallel()
	c, ns := start(t)
	ud := newUD(ns, 0, zones("zone-a"), cloneSetTemplate())
	ud.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	create(t, c, ud)
	first := waitStatus(t, c, ud, "the first revision", func(u *kruiseappsv1alpha1.UnitedDeployment) bool {
		return u.Status.ObservedGeneration == u.Generation && u.Status.CurrentRevision != ""
	}).Status.CurrentRevision
	var updated string
	for _, image := range []string{"nginx:2", "nginx:3", "nginx:4"} {
		update(t, c, ud, func(u *kruiseappsv1alpha1.UnitedDeployment) {
			u.Spec.Template.CloneSetTemplate.Spec.Template.Spec.Containers[0].Image = image
		})
		updated = waitStatus(t, c, ud, "revision of "+image, func(u *kruiseappsv1alpha1.UnitedDeployment) bool {
			return u.Status.ObservedGeneration == u.Generation
		}).Status.UpdateStatus.UpdatedRevision
	}
	// No pods: each revision became current at once (upstream's rule), so only it is live.
	eventually(t, "history cut to the limit", func(ctx context.Context) (bool, error) {
		names, err := revisionNames(ctx, c, ns)
		return len(names) == 2 && names[1] == updated && !slices.Contains(names, first), fmt.Errorf("revisions %v (%w)", names, err)
	})
	update(t, c, ud, func(u *kruiseappsv1alpha1.UnitedDeployment) {
		u.Spec.Template.CloneSetTemplate.Spec.Template.Spec.Containers[0].Image = "nginx:3"
	})
	eventually(t, "nginx:3's revision renumbered the newest", func(ctx context.Context) (bool, error) {
		names, err := revisionNames(ctx, c, ns)
		return len(names) == 2 && names[0] == updated, fmt.Errorf("revisions %v (%w)", names, err)
	})
}
