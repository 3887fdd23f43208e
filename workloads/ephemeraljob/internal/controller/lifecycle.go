package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/ephemeraljob/internal/plan"
)

// ensureFinalizer puts upstream's cleanup finalizer on the job, so that its deletion passes through the
// controller.
func (r *Reconciler) ensureFinalizer(ctx context.Context, job *kruiseappsv1alpha1.EphemeralJob) error {
	if controllerutil.ContainsFinalizer(job, kruiseappsv1alpha1.EphemeralContainerFinalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(job.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(job, kruiseappsv1alpha1.EphemeralContainerFinalizer)
	if err := r.Client.Patch(ctx, job, patch); err != nil {
		return fmt.Errorf("adding the finalizer: %w", err)
	}
	return nil
}

// release lets a deleted job go. Kubernetes cannot remove or stop an ephemeral container once added: those the
// job injected run until they exit or their pod ends, whatever happens to the job. So the cleanup upstream's
// finalizer stands for has nothing to remove; the controller logs what stays and drops the finalizer.
func (r *Reconciler) release(ctx context.Context, job *kruiseappsv1alpha1.EphemeralJob) error {
	r.forget(client.ObjectKeyFromObject(job), job.UID)
	if !controllerutil.ContainsFinalizer(job, kruiseappsv1alpha1.EphemeralContainerFinalizer) {
		return nil
	}
	if pods, err := r.selected(ctx, job); err == nil {
		ctrl.LoggerFrom(ctx).Info("Releasing the deleted EphemeralJob; its ephemeral containers stay in their pods",
			"runningIn", runningIn(job, pods))
	}
	patch := client.MergeFromWithOptions(job.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(job, kruiseappsv1alpha1.EphemeralContainerFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, job, patch))
}

// runningIn names the pods where a container the job injected still runs.
func runningIn(job *kruiseappsv1alpha1.EphemeralJob, pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		if plan.PodState(job, p) == plan.Running {
			out = append(out, p.Name)
		}
	}
	return out
}

// expire deletes a finished job once ttlSecondsAfterFinished has passed, and otherwise looks again then.
func (r *Reconciler) expire(ctx context.Context, job *kruiseappsv1alpha1.EphemeralJob) (ctrl.Result, error) {
	if left := plan.Expiry(job, r.Clock.Now()); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	ctrl.LoggerFrom(ctx).Info("Deleting the EphemeralJob: ttlSecondsAfterFinished passed", "completionTime", job.Status.CompletionTime)
	err := r.Client.Delete(ctx, job, client.Preconditions{UID: &job.UID})
	if err == nil {
		ttlDeletions.Inc()
	}
	return ctrl.Result{}, client.IgnoreNotFound(err)
}
