package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/workloadref"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread/internal/plan"
)

// podHandler enqueues the WorkloadSpread a pod's matched-workloadspread annotation names, on any event: the
// pods of a spread are few, and their phase, readiness and deletion all count.
func podHandler() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil
		}
		m, ok := plan.MatchedOf(pod)
		if !ok {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pod.Namespace, Name: m.Name}}}
	})
}

// watchedWorkload is a target kind whose replicas (the base of percentages) the controller watches.
type watchedWorkload struct {
	obj      client.Object
	kind     schema.GroupKind
	replicas func(client.Object) *int32
}

// watchedWorkloads are the native target kinds, and CloneSets and Advanced StatefulSets when served.
func watchedWorkloads(kruise bool) []watchedWorkload {
	kinds := []watchedWorkload{
		{obj: &appsv1.Deployment{}, kind: workloadref.DeploymentKind, replicas: func(o client.Object) *int32 { return o.(*appsv1.Deployment).Spec.Replicas }},
		{obj: &appsv1.ReplicaSet{}, kind: workloadref.ReplicaSetKind, replicas: func(o client.Object) *int32 { return o.(*appsv1.ReplicaSet).Spec.Replicas }},
		{obj: &appsv1.StatefulSet{}, kind: workloadref.StatefulSetKind, replicas: func(o client.Object) *int32 { return o.(*appsv1.StatefulSet).Spec.Replicas }},
		{obj: &batchv1.Job{}, kind: jobKind, replicas: func(o client.Object) *int32 { return o.(*batchv1.Job).Spec.Parallelism }},
	}
	if kruise {
		kinds = append(kinds,
			watchedWorkload{obj: &kruiseappsv1alpha1.CloneSet{}, kind: workloadref.CloneSetKind,
				replicas: func(o client.Object) *int32 { return o.(*kruiseappsv1alpha1.CloneSet).Spec.Replicas }},
			watchedWorkload{obj: &kruiseappsv1beta1.StatefulSet{}, kind: workloadref.AdvancedStatefulSetKind,
				replicas: func(o client.Object) *int32 { return o.(*kruiseappsv1beta1.StatefulSet).Spec.Replicas }})
	}
	return kinds
}

// replicasChanged passes a workload's creation and deletion, and updates that change its replicas.
func replicasChanged(replicas func(client.Object) *int32) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, b := replicas(e.ObjectOld), replicas(e.ObjectNew)
			return (a == nil) != (b == nil) || (a != nil && *a != *b)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// workloadHandler enqueues the WorkloadSpreads whose target is the workload of kind.
func (r *Reconciler) workloadHandler(kind schema.GroupKind) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		list, err := Spreading(ctx, r.Client, obj.GetNamespace(), kind, obj.GetName())
		if err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list))
		for i := range list {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list[i])})
		}
		return out
	})
}
