package controller

import (
	"context"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/controllerref"
	"github.com/flotilla-dev/flotilla/workloads/podunavailablebudget/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/workloadref"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// podHandler enqueues the budgets of a pod that appears, goes, changes its labels or its availability, or
// starts terminating.
func (r *Reconciler) podHandler() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { r.enqueueBudgetsOf(ctx, q, e.Object, true) },
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { r.enqueueBudgetsOf(ctx, q, e.Object, false) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			old, okOld := e.ObjectOld.(*corev1.Pod)
			cur, okCur := e.ObjectNew.(*corev1.Pod)
			if !okOld || !okCur {
				return
			}
			relabelled := !maps.Equal(old.Labels, cur.Labels)
			if relabelled || plan.Available(old) != plan.Available(cur) || (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) {
				r.enqueueBudgetsOf(ctx, q, old, relabelled)
				r.enqueueBudgetsOf(ctx, q, cur, relabelled)
			}
		},
	}
}

// enqueueBudgetsOf enqueues the budget obj's related-pub annotation names, and, when match is set or it names
// none, the budgets of its namespace that select it.
func (r *Reconciler) enqueueBudgetsOf(ctx context.Context, q queue, obj client.Object, match bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	name := plan.RelatedBudget(pod)
	if name != "" {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pod.Namespace, Name: name}})
	}
	if !match && name != "" {
		return
	}
	for _, pub := range r.budgetsIn(ctx, pod.Namespace) {
		if r.selects(ctx, &pub, pod) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pub)})
		}
	}
}

// budgetsIn lists the budgets of a namespace from the cache; a failed read enqueues nothing (the budgets'
// own events still reconcile them).
func (r *Reconciler) budgetsIn(ctx context.Context, ns string) []kruisepolicyv1alpha1.PodUnavailableBudget {
	list := &kruisepolicyv1alpha1.PodUnavailableBudgetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	return list.Items
}

// selects tells, from the cache and without a call to the API server, whether pub may protect pod: its
// selector matches the pod's labels, or the pod's controller is pub's target (or a ReplicaSet of the target
// Deployment). A target read through its scale subresource may select pods it does not control: those pods
// are taken as selected, which costs a reconcile at most.
func (r *Reconciler) selects(ctx context.Context, pub *kruisepolicyv1alpha1.PodUnavailableBudget, pod *corev1.Pod) bool {
	if pub.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(pub.Spec.Selector)
		return err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels))
	}
	target := pub.Spec.TargetReference
	if target == nil {
		return false
	}
	gv, err := schema.ParseGroupVersion(target.APIVersion)
	if err != nil {
		return false
	}
	switch gk := (schema.GroupKind{Group: gv.Group, Kind: target.Kind}); gk {
	case workloadref.ReplicaSetKind, workloadref.StatefulSetKind, workloadref.CloneSetKind, workloadref.AdvancedStatefulSetKind:
		return controlledBy(pod, gk, target.Name)
	case workloadref.DeploymentKind:
		return r.controlledByDeployment(ctx, pod, target.Name)
	}
	return true
}

func controlledBy(obj metav1.Object, gk schema.GroupKind, name string) bool {
	owner := controllerref.Of(obj, gk)
	return owner != nil && owner.Name == name
}

func (r *Reconciler) controlledByDeployment(ctx context.Context, pod *corev1.Pod, name string) bool {
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil || owner.Kind != workloadref.ReplicaSetKind.Kind {
		return false
	}
	rs := &appsv1.ReplicaSet{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: owner.Name}, rs); err != nil {
		return false
	}
	return controlledBy(rs, workloadref.DeploymentKind, name)
}

// workloadHandler enqueues, for a workload of kind, the budgets of its namespace that target it and those
// that select pods (whose replicas they count from their pods' workloads).
func (r *Reconciler) workloadHandler(kind schema.GroupKind) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, pub := range r.budgetsIn(ctx, obj.GetNamespace()) {
			if t := pub.Spec.TargetReference; pub.Spec.Selector != nil || (t != nil && t.Kind == kind.Kind && t.Name == obj.GetName() &&
				groupOf(t.APIVersion) == kind.Group) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pub)})
			}
		}
		return out
	})
}

func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return "\x00"
	}
	return gv.Group
}
