package podprobe

import (
	"context"
	"maps"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/podprobe/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// nodePodProbeChanged passes a NodePodProbe's creation and deletion (one deleted while its node lives is made
// again), and the updates of its spec or status (the agent's results).
var nodePodProbeChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, okOld := e.ObjectOld.(*kruiseappsv1alpha1.NodePodProbe)
	n, okNew := e.ObjectNew.(*kruiseappsv1alpha1.NodePodProbe)
	return !okOld || !okNew || o.Generation != n.Generation || !reflect.DeepEqual(o.Status, n.Status)
}}

// podHandler maps a pod event to its node's NodePodProbe when that has an entry for the pod: a pod deleted or
// done loses its entry; one whose labels, annotations or conditions changed gets its results written again.
func (r *NodeReconciler) podHandler() handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			o, okOld := e.ObjectOld.(*corev1.Pod)
			n, okNew := e.ObjectNew.(*corev1.Pod)
			if okOld && okNew && podMovedForResults(o, n) {
				r.enqueueNodeOf(ctx, n, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			if pod, ok := e.Object.(*corev1.Pod); ok {
				r.enqueueNodeOf(ctx, pod, q)
			}
		},
	}
}

func podMovedForResults(o, n *corev1.Pod) bool {
	return plan.Active(o) != plan.Active(n) || !maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations) ||
		!reflect.DeepEqual(o.Status.Conditions, n.Status.Conditions)
}

// enqueueNodeOf adds the pod's node when its NodePodProbe (in the cache) has an entry for the pod.
func (r *NodeReconciler) enqueueNodeOf(ctx context.Context, pod *corev1.Pod, q queue) {
	if pod.Spec.NodeName == "" {
		return
	}
	npp := &kruiseappsv1alpha1.NodePodProbe{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, npp); err != nil {
		if client.IgnoreNotFound(err) != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Reading the NodePodProbe of a pod's node", "node", pod.Spec.NodeName)
		}
		return
	}
	for _, e := range npp.Spec.PodProbes {
		if e.Namespace == pod.Namespace && e.Name == pod.Name {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: npp.Name}})
			return
		}
	}
}

// markerHandler maps a marker to the NodePodProbes holding its probes (MarkerIndex): an edited policy or
// condition type is written onto the pods from the results they have.
func (r *NodeReconciler) markerHandler() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		list := &kruiseappsv1alpha1.NodePodProbeList{}
		err := r.Client.List(ctx, list, client.MatchingFields{MarkerIndex: plan.MarkerKey(obj.GetNamespace(), obj.GetName())}, client.UnsafeDisableDeepCopy)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the NodePodProbes of a PodProbeMarker")
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
		return reqs
	})
}
