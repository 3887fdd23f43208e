package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/uniteddeployment/internal/plan"
)

// owned are the workloads of the four subset kinds in ud's namespace that ud controls.
func (r *Reconciler) owned(ctx context.Context, ud *kruiseappsv1alpha1.UnitedDeployment) ([]client.Object, error) {
	var out []client.Object
	for _, k := range plan.Kinds {
		list := k.NewList()
		if err := r.Client.List(ctx, list, client.InNamespace(ud.Namespace)); err != nil {
			return nil, fmt.Errorf("list %s workloads: %w", k.Name(), err)
		}
		for _, obj := range k.Items(list) {
			if controlledBy(obj, ud) {
				out = append(out, obj)
			}
		}
	}
	return out, nil
}

// revisionsOf are the ControllerRevisions in ud's namespace that ud controls.
func (r *Reconciler) revisionsOf(ctx context.Context, ud *kruiseappsv1alpha1.UnitedDeployment) ([]*appsv1.ControllerRevision, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ud.Namespace)); err != nil {
		return nil, fmt.Errorf("list revisions: %w", err)
	}
	var out []*appsv1.ControllerRevision
	for i := range list.Items {
		if controlledBy(&list.Items[i], ud) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

func controlledBy(obj client.Object, ud *kruiseappsv1alpha1.UnitedDeployment) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && ref.UID == ud.UID {
			return true
		}
	}
	return false
}
