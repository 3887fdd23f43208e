package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/broadcastjob/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/controllerref"
	"github.com/flotilla-dev/flotilla/workloads/nodeplacement"
)

// podControllerIndex indexes the pods a BroadcastJob controls by the job's UID, so that a job reads its own
// pods and never the rest of the namespace. Other pods are not indexed.
const podControllerIndex = "broadcastjob.flotilla.dev/controller-uid"

func podController(pod *corev1.Pod) []string {
	ref := controllerref.Of(pod, plan.Kind.GroupKind())
	if ref == nil {
		return nil
	}
	return []string{string(ref.UID)}
}

// gather reads what a reconcile of the job needs: its pods (the cache's own, read only) and every node.
func (r *Reconciler) gather(ctx context.Context, job *kruiseappsv1alpha1.BroadcastJob) (plan.Input, error) {
	pods, err := r.pods.Get(ctx, job.Namespace, string(job.UID), nil)
	if err != nil {
		return plan.Input{}, err
	}
	list := &corev1.NodeList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return plan.Input{}, fmt.Errorf("list nodes: %w", err)
	}
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	return plan.Input{Now: r.Clock.Now(), Job: job, Nodes: nodes, Pods: pods}, nil
}

// nodeChanged passes the node events that can change where a job's pods go: those of
// nodeplacement.NodeChanged, and a change of the node's allocatable resources, which the jobs' pods must fit.
var nodeChanged = predicate.Or[client.Object](nodeplacement.NodeChanged, predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	DeleteFunc: func(event.DeleteEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*corev1.Node)
		after, ok2 := e.ObjectNew.(*corev1.Node)
		return ok1 && ok2 && !equality.Semantic.DeepEqual(before.Status.Allocatable, after.Status.Allocatable)
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
})

// nodeHandler maps a node event to the jobs still at work that it concerns: on a new node, those whose
// template fits it; on a changed one, those it fits now and did not, or the other way round; on a node gone,
// every one (its desired count drops).
func (r *Reconciler) nodeHandler() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueJobs(ctx, q, func(j *kruiseappsv1alpha1.BroadcastJob) bool { return fits(e.Object, j) })
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueJobs(ctx, q, func(j *kruiseappsv1alpha1.BroadcastJob) bool { return fits(e.ObjectOld, j) != fits(e.ObjectNew, j) })
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueJobs(ctx, q, func(*kruiseappsv1alpha1.BroadcastJob) bool { return true })
		},
	}
}

func fits(obj client.Object, job *kruiseappsv1alpha1.BroadcastJob) bool {
	node, ok := obj.(*corev1.Node)
	return ok && nodeplacement.Fits(node, &job.Spec.Template.Spec)
}

// enqueueJobs adds the unfinished jobs that concern says a node event concerns.
func (r *Reconciler) enqueueJobs(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request],
	concern func(*kruiseappsv1alpha1.BroadcastJob) bool) {
	list := &kruiseappsv1alpha1.BroadcastJobList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	for i := range list.Items {
		if j := &list.Items[i]; !plan.Finished(j) && concern(j) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(j)})
		}
	}
}
