package controller

import (
	"context"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// podChanged passes the pod updates a job can see: labels (selection), phase and deletion (activity), and
// ephemeral containers with their statuses.
var podChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Pod)
	n, ok2 := e.ObjectNew.(*corev1.Pod)
	if !ok1 || !ok2 {
		return false
	}
	return !reflect.DeepEqual(o.Labels, n.Labels) || o.Status.Phase != n.Status.Phase ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		!reflect.DeepEqual(o.Spec.EphemeralContainers, n.Spec.EphemeralContainers) ||
		!reflect.DeepEqual(o.Status.EphemeralContainerStatuses, n.Status.EphemeralContainerStatuses)
}}

// podHandler wakes the jobs of a pod's namespace whose selector matches the pod, before or after the change.
type podHandler struct {
	reader client.Reader
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h *podHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	h.enqueue(ctx, q, e.Object)
}

func (h *podHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	h.enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
}

func (h *podHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	h.enqueue(ctx, q, e.Object)
}

func (h *podHandler) Generic(context.Context, event.GenericEvent, queue) {}

func (h *podHandler) enqueue(ctx context.Context, q queue, pods ...client.Object) {
	jobs := &kruiseappsv1alpha1.EphemeralJobList{}
	if err := h.reader.List(ctx, jobs, client.InNamespace(pods[0].GetNamespace())); err != nil {
		return
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
		if err != nil {
			continue
		}
		for _, p := range pods {
			if sel.Matches(labels.Set(p.GetLabels())) {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(job)})
				break
			}
		}
	}
}
