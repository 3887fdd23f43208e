package imagejob

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/imagejob/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// nodeImageHandler maps NodeImage events to the jobs they concern: those its tags name (their statuses moved,
// or the NodeImage went with its node), and, for a NodeImage created or relabelled, the unfinished jobs that
// select nodes by name or label, which may now select it.
func (r *PullJobReconciler) nodeImageHandler() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			enqueueOwners(e.Object, q)
			r.enqueueNodeSelecting(ctx, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			enqueueOwners(e.ObjectOld, q)
			enqueueOwners(e.ObjectNew, q)
			if !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) {
				r.enqueueNodeSelecting(ctx, q)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) { enqueueOwners(e.Object, q) },
	}
}

func enqueueOwners(obj client.Object, q queue) {
	ni, ok := obj.(*kruiseappsv1alpha1.NodeImage)
	if !ok {
		return
	}
	for _, img := range ni.Spec.Images {
		for _, tag := range img.Tags {
			for _, ref := range tag.OwnerReferences {
				if plan.IsImagePullJob(ref) {
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}})
				}
			}
		}
	}
}

// enqueueNodeSelecting enqueues the unfinished jobs without a podSelector.
func (r *PullJobReconciler) enqueueNodeSelecting(ctx context.Context, q queue) {
	r.enqueueJobs(ctx, q, nil, func(job *kruiseappsv1alpha1.ImagePullJob) bool { return job.Spec.PodSelector == nil })
}

// enqueueJobs enqueues the unfinished jobs (of namespace opts, if any) that match.
func (r *PullJobReconciler) enqueueJobs(ctx context.Context, q queue, opts []client.ListOption, match func(*kruiseappsv1alpha1.ImagePullJob) bool) {
	jobs := &kruiseappsv1alpha1.ImagePullJobList{}
	if err := r.Client.List(ctx, jobs, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing ImagePullJobs for an event")
		return
	}
	for i := range jobs.Items {
		if job := &jobs.Items[i]; !plan.Finished(job) && match(job) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(job)})
		}
	}
}

// podHandler maps a pod's events to the unfinished jobs of its namespace whose podSelector matches it (before
// or after a relabelling).
func (r *PullJobReconciler) podHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, q queue, pods ...client.Object) {
		r.enqueueJobs(ctx, q, []client.ListOption{client.InNamespace(pods[0].GetNamespace())}, func(job *kruiseappsv1alpha1.ImagePullJob) bool {
			sel, err := plan.PodSelector(job)
			if err != nil || sel == nil {
				return false
			}
			for _, p := range pods {
				if sel.Matches(labels.Set(p.GetLabels())) {
					return true
				}
			}
			return false
		})
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { enqueue(ctx, q, e.Object) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) { enqueue(ctx, q, e.ObjectOld, e.ObjectNew) },
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { enqueue(ctx, q, e.Object) },
	}
}

// podPlacementChanged passes the pod updates that can change which nodes a podSelector covers.
var podPlacementChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	oldPod, okOld := e.ObjectOld.(*corev1.Pod)
	newPod, okNew := e.ObjectNew.(*corev1.Pod)
	return !okOld || !okNew || placed(oldPod) != placed(newPod) || oldPod.Spec.NodeName != newPod.Spec.NodeName ||
		!maps.Equal(oldPod.Labels, newPod.Labels)
}}

// writeResult is the result label of a write: success, conflict (a stale read, retried) or failure.
func writeResult(err error) string {
	switch {
	case err == nil:
		return "success"
	case apierrors.IsConflict(err):
		return "conflict"
	}
	return "failure"
}
