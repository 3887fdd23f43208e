package podprobe

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/podprobe/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// markerChanged passes a marker's creation and the updates that matter: its spec (generation), its deletion,
// and its finalizers (one taken away while it lives is put back). The controller's status writes do not.
var markerChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetGeneration() != n.GetGeneration() || n.GetDeletionTimestamp() != nil ||
			!slices.Equal(o.GetFinalizers(), n.GetFinalizers())
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// podHandler maps a pod event to the markers of its namespace whose selectors match the pod (before or after
// the event): a pod becoming eligible, leaving (not active, deleted), moving to another IP or changing labels
// changes what they write, and their matched pods.
func (r *MarkerReconciler) podHandler() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			if pod, ok := e.Object.(*corev1.Pod); ok && plan.Eligible(pod) {
				r.enqueueSelecting(ctx, pod.Namespace, q, pod.Labels)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			o, okOld := e.ObjectOld.(*corev1.Pod)
			n, okNew := e.ObjectNew.(*corev1.Pod)
			if okOld && okNew && podMovedForMarkers(o, n) {
				r.enqueueSelecting(ctx, n.Namespace, q, o.Labels, n.Labels)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			if pod, ok := e.Object.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
				r.enqueueSelecting(ctx, pod.Namespace, q, pod.Labels)
			}
		},
	}
}

// podMovedForMarkers tells a pod update that changes what the markers matching it write or count.
func podMovedForMarkers(o, n *corev1.Pod) bool {
	return plan.Eligible(o) != plan.Eligible(n) || o.Status.PodIP != n.Status.PodIP || o.Spec.NodeName != n.Spec.NodeName ||
		!maps.Equal(o.Labels, n.Labels)
}

// enqueueSelecting adds the markers of namespace ns whose selectors match any of the label sets.
func (r *MarkerReconciler) enqueueSelecting(ctx context.Context, ns string, q queue, labelSets ...map[string]string) {
	list := &kruiseappsv1alpha1.PodProbeMarkerList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the PodProbeMarkers of a pod's namespace", "namespace", ns)
		return
	}
	for i := range list.Items {
		ppm := &list.Items[i]
		for _, set := range labelSets {
			if selects(ppm, set) {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ppm)})
				break
			}
		}
	}
}

// nodePodProbeHandler brings back every marker when a NodePodProbe is created: those with pods on its node
// could not write there before. Nodes come rarely, and a marker with nothing to write there writes nothing.
func (r *MarkerReconciler) nodePodProbeHandler() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q queue) {
			list := &kruiseappsv1alpha1.PodProbeMarkerList{}
			if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Listing the PodProbeMarkers for a new NodePodProbe")
				return
			}
			for i := range list.Items {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		},
	}
}
