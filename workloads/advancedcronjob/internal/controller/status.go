package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/workloads/advancedcronjob/internal/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/statuspatch"
)

// writeStatus reports the template's kind, the running children (with the one just created, without those
// just replaced) and the last run, and patches the status when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, acj *kruiseappsv1alpha1.AdvancedCronJob, kids children, p plan.Plan, out outcome) error {
	next := acj.Status.DeepCopy()
	next.Type = plan.TemplateKind(&acj.Spec)
	next.Active = activeRefs(acj, kids, p, out)
	if p.LastScheduleTime != nil {
		next.LastScheduleTime = &metav1.Time{Time: *p.LastScheduleTime}
	}
	if out.created != nil {
		next.LastScheduleTime = &metav1.Time{Time: *p.Run}
	}
	if equality.Semantic.DeepEqual(&acj.Status, next) {
		return nil
	}
	old := acj.Status
	acj.Status = *next
	return statuspatch.Write(ctx, r.Client, acj, old, *next)
}

// activeRefs references the running children. A child the status already lists keeps its reference as
// written when it was first seen, so that its own status changes do not rewrite the AdvancedCronJob's.
func activeRefs(acj *kruiseappsv1alpha1.AdvancedCronJob, kids children, p plan.Plan, out outcome) []corev1.ObjectReference {
	listed := map[types.UID]corev1.ObjectReference{}
	for _, ref := range acj.Status.Active {
		listed[ref.UID] = ref
	}
	byUID := kids.byUID()
	var refs []corev1.ObjectReference
	for _, c := range p.Active {
		if out.replaced[c.UID] {
			continue
		}
		if ref, ok := listed[c.UID]; ok {
			refs = append(refs, ref)
			continue
		}
		k := byUID[string(c.UID)]
		refs = append(refs, reference(k.obj, k.kind))
	}
	if out.created != nil {
		refs = append(refs, reference(out.created, out.kind))
	}
	return refs
}

func reference(obj client.Object, kind string) corev1.ObjectReference {
	apiVersion := kruiseappsv1alpha1.GroupVersion.String()
	if kind == "Job" {
		apiVersion = "batch/v1"
	}
	return corev1.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion()}
}
