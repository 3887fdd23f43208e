package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

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
