package imagejob

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/imagejob/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/parallel"
	"github.com/flotilla-dev/flotilla/workloads/statuspatch"
)

// nodeImageWorkers bounds the NodeImage writes of one reconcile in flight at once.
const nodeImageWorkers = 16

// writeMeta records the job's active nodes (policy Always: plan.ActiveNodesAnnotation) and, for a job with
// pull secrets, upstream's deletion-protection finalizer, so that the secrets' copies are released before the
// job goes. The patch holds the job's resourceVersion, which it advances on job.
func (r *PullJobReconciler) writeMeta(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob, active []string) error {
	next := job.DeepCopy()
	if len(job.Spec.PullSecrets) > 0 {
		controllerutil.AddFinalizer(next, kruiseappsv1alpha1.DeletionProtectionFinalizer)
	}
	next.Annotations = maps.Clone(job.Annotations)
	delete(next.Annotations, plan.ActiveNodesAnnotation)
	if v := plan.ActiveNodesValue(active); v != "" && job.Spec.CompletionPolicy.Type != kruiseappsv1alpha1.Never {
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		next.Annotations[plan.ActiveNodesAnnotation] = v
	}
	if equality.Semantic.DeepEqual(job.ObjectMeta, next.ObjectMeta) {
		return nil
	}
	return r.patchMeta(ctx, job, next)
}

// patchMeta sends next's metadata as a patch of job locked to job's resourceVersion, and takes the written
// metadata back into job.
func (r *PullJobReconciler) patchMeta(ctx context.Context, job, next *kruiseappsv1alpha1.ImagePullJob) error {
	if err := r.Client.Patch(ctx, next, client.MergeFromWithOptions(job, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching ImagePullJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	job.ObjectMeta = next.ObjectMeta
	return nil
}

// activate writes the job's tag into the NodeImages of the nodes it starts now, after the copies of its pull
// secrets the tags name.
func (r *PullJobReconciler) activate(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob, in plan.Input, names []string) error {
	if len(names) == 0 {
		return nil
	}
	secrets, err := r.syncSecrets(ctx, job)
	if err != nil {
		return err
	}
	req := plan.NewTagRequest(job, in.Image, in.Tag, secrets, in.Now)
	byName := make(map[string]*kruiseappsv1alpha1.NodeImage, len(in.Selected))
	for _, ni := range in.Selected {
		byName[ni.Name] = ni
	}
	return parallel.Each(names, nodeImageWorkers, func(name string) error {
		spec, changed := plan.WithTag(byName[name], req)
		if !changed {
			return nil
		}
		return r.updateNodeImage(ctx, job, byName[name], spec)
	})
}

// updateNodeImage writes spec into ni (as the cache shows it: a stale copy conflicts) and expects the cache
// to show the write before the job plans again.
func (r *PullJobReconciler) updateNodeImage(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob, ni *kruiseappsv1alpha1.NodeImage,
	spec kruiseappsv1alpha1.NodeImageSpec) error {
	next := ni.DeepCopy()
	next.Spec = spec
	err := r.Client.Update(ctx, next)
	countNodeImageUpdate(err)
	if err != nil {
		return fmt.Errorf("updating NodeImage %s: %w", ni.Name, err)
	}
	r.expectations.Updated(client.ObjectKeyFromObject(job), next.Name, next.ResourceVersion)
	return nil
}

// writeStatus patches the job's status when it changed, locked to the job's resourceVersion.
func (r *PullJobReconciler) writeStatus(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob, next kruiseappsv1alpha1.ImagePullJobStatus) error {
	if equality.Semantic.DeepEqual(job.Status, next) {
		return nil
	}
	return statuspatch.WriteLocked(ctx, r.Client, job, job.Status, next)
}

// record records the decision's events about the job: they tell of transitions its written status shows.
func (r *PullJobReconciler) record(job *kruiseappsv1alpha1.ImagePullJob, events []plan.Event) {
	for _, e := range events {
		r.Recorder.Eventf(job, nil, e.Type, e.Reason, e.Action, "%s", e.Message)
	}
}

// release takes the job's references out of the NodeImages' tags; a tag left without owners goes, which
// stops its pull.
func (r *PullJobReconciler) release(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob) error {
	list := &kruiseappsv1alpha1.NodeImageList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{plan.OwnerIndex: plan.JobKey(job)}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing the NodeImages of the job: %w", err)
	}
	mine := func(ref corev1.ObjectReference) bool { return plan.IsImagePullJob(ref) && ref.UID == job.UID }
	items := make([]*kruiseappsv1alpha1.NodeImage, 0, len(list.Items))
	for i := range list.Items {
		items = append(items, &list.Items[i])
	}
	return parallel.Each(items, nodeImageWorkers, func(ni *kruiseappsv1alpha1.NodeImage) error {
		spec, changed := plan.WithoutOwners(ni.Spec, mine)
		if !changed {
			return nil
		}
		return r.updateNodeImage(ctx, job, ni, spec)
	})
}

// removeFinalizer lets a finished or deleted job go once what it spread is taken back.
func (r *PullJobReconciler) removeFinalizer(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob) error {
	if !slices.Contains(job.Finalizers, kruiseappsv1alpha1.DeletionProtectionFinalizer) {
		return nil
	}
	next := job.DeepCopy()
	controllerutil.RemoveFinalizer(next, kruiseappsv1alpha1.DeletionProtectionFinalizer)
	return r.patchMeta(ctx, job, next)
}

// deleteJob deletes a job whose TTL after finishing has passed.
func (r *PullJobReconciler) deleteJob(ctx context.Context, job *kruiseappsv1alpha1.ImagePullJob) error {
	err := r.Client.Delete(ctx, job, client.Preconditions{UID: &job.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting the finished job: %w", err)
	}
	return nil
}
