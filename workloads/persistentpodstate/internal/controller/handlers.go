package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// IsStatefulSetRef reports whether a controller reference names a StatefulSet, native or Advanced.
func IsStatefulSetRef(ref *metav1.OwnerReference) bool {
	if ref == nil || ref.Kind != "StatefulSet" {
		return false
	}
	group := groupOf(ref.APIVersion)
	return group == "apps" || group == "apps.kruise.io"
}

// byPodController maps a pod to the PersistentPodState of the StatefulSet that controls it.
func (r *Recorder) byPodController() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		ref := metav1.GetControllerOf(obj)
		if !IsStatefulSetRef(ref) {
			return nil
		}
		return r.requests(ctx, obj.GetNamespace(), ref.APIVersion, ref.Name)
	})
}

// byStatefulSet maps a StatefulSet of apiVersion to its PersistentPodState.
func (r *Recorder) byStatefulSet(apiVersion string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		return r.requests(ctx, obj.GetNamespace(), apiVersion, obj.GetName())
	})
}

func (r *Recorder) requests(ctx context.Context, namespace, apiVersion, name string) []reconcile.Request {
	pps, err := Find(ctx, r.Client, namespace, apiVersion, name)
	if err != nil || pps == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pps.Namespace, Name: pps.Name}}}
}

// podRecordable passes the pod events that can change records: turning Ready (or moving while Ready), and
// going (a deletion starting, or the pod gone).
func podRecordable() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return isReadyPod(e.Object) },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldPod, okOld := e.ObjectOld.(*corev1.Pod)
			newPod, okNew := e.ObjectNew.(*corev1.Pod)
			if !okOld || !okNew {
				return false
			}
			turnedReady := podcondition.IsReady(newPod) && (!podcondition.IsReady(oldPod) || oldPod.Spec.NodeName != newPod.Spec.NodeName)
			return turnedReady || (oldPod.DeletionTimestamp == nil && newPod.DeletionTimestamp != nil)
		},
	}
}

func isReadyPod(obj client.Object) bool {
	pod, ok := obj.(*corev1.Pod)
	return ok && podcondition.IsReady(pod)
}

// specOrDeletion passes StatefulSet events that can change records: a new spec (replicas, reserved
// ordinals) or a deletion.
func specOrDeletion() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
				(e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil)
		},
	}
}
