// Package orphans wakes the workloads that may adopt a pod without a controller. A workload adopts the orphans
// its selector matches only while it reconciles, and its Owns watch maps a pod event to the pod's controller
// only: an orphan that reaches the cache after that reconcile (cache lag, a pod created or relabelled later, a
// pod released by another owner) would wait for some unrelated event. As kube's workload controllers do, an
// orphan's event enqueues every workload of its namespace whose selector matches it.
package orphans

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Workload is what matching an orphan needs of a workload: its key and its pod selector.
type Workload struct {
	Key      types.NamespacedName
	Selector *metav1.LabelSelector
}

// Lister lists the workloads of one kind in a namespace.
type Lister func(ctx context.Context, namespace string) ([]Workload, error)

// From lists with c (the manager's cache) the workloads whose empty list newList makes; selector reads an
// item's pod selector. The items are the cache's own (no deep copy): they are only read.
func From[W client.Object](c client.Reader, newList func() client.ObjectList, selector func(W) *metav1.LabelSelector) Lister {
	return func(ctx context.Context, namespace string) ([]Workload, error) {
		list := newList()
		if err := c.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		var out []Workload
		err := meta.EachListItem(list, func(obj runtime.Object) error {
			w, ok := obj.(W)
			if !ok {
				return fmt.Errorf("listing workloads: got %T", obj)
			}
			out = append(out, Workload{Key: client.ObjectKeyFromObject(w), Selector: selector(w)})
			return nil
		})
		return out, err
	}
}

// Adopters returns a request for each workload that may adopt the pod: none when the pod has a controller
// (Owns reaches that one), else those of the pod's namespace whose selector matches its labels.
func Adopters(pod *corev1.Pod, workloads []Workload) []reconcile.Request {
	if metav1.GetControllerOf(pod) != nil {
		return nil
	}
	var out []reconcile.Request
	for _, w := range workloads {
		if w.Key.Namespace == pod.Namespace && selects(w.Selector, pod.Labels) {
			out = append(out, reconcile.Request{NamespacedName: w.Key})
		}
	}
	return out
}

// selects reports whether s matches the labels. An invalid or empty selector matches nothing: the workload's
// reconcile refuses it rather than claim every pod of the namespace.
func selects(s *metav1.LabelSelector, podLabels map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(s)
	return err == nil && !sel.Empty() && sel.Matches(labels.Set(podLabels))
}

// Handler enqueues, on an orphan pod's create or update, the workloads of list that may adopt it. Its deletion
// needs nothing: no workload adopts a pod being deleted.
func Handler(list Lister) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, list, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, list, e.ObjectNew, q)
		},
	}
}

func enqueue(ctx context.Context, list Lister, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || metav1.GetControllerOf(pod) != nil {
		return
	}
	workloads, err := list(ctx, pod.Namespace)
	if err != nil {
		log.FromContext(ctx).Error(err, "Listing the workloads that may adopt an orphan pod", "pod", client.ObjectKeyFromObject(pod))
		return
	}
	for _, req := range Adopters(pod, workloads) {
		q.Add(req)
	}
}

// Predicate passes the pod events that may give a workload a new orphan to adopt: an orphan added, or an
// update that leaves a pod an orphan with other labels or that just released it. A pod's other updates
// (status, the cache's resyncs) change no selector's choice; pods being deleted are not adopted.
var Predicate = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return adoptable(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return adoptable(e.ObjectNew) &&
			(metav1.GetControllerOf(e.ObjectOld) != nil || !labels.Equals(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()))
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func adoptable(obj client.Object) bool {
	return metav1.GetControllerOf(obj) == nil && obj.GetDeletionTimestamp() == nil
}
