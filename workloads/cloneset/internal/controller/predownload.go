package controller

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/plan"
)

// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagepulljobs,verbs=get;list;watch;create;delete

// preDownload runs upstream's image pre-download for in-place updates (feature gate
// PreDownloadImageForInPlaceUpdate): while the CloneSet moves between revisions it creates the ImagePullJobs
// that pull the new images on the nodes of the old pods, once per revision; once it runs one revision again
// the jobs go. The pulling itself is the node agent's.
func (r *Reconciler) preDownload(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, revs *revisions) error {
	if !r.PreDownloadImages {
		return nil
	}
	if revs.current.Name == revs.update.Name {
		return r.deletePreDownloadJobs(ctx, cs)
	}
	labels := revs.update.Labels
	if _, done := labels[kruiseappsv1alpha1.ImagePreDownloadCreatedKey]; done {
		return nil
	}
	if _, done := labels[kruiseappsv1alpha1.ImagePreDownloadIgnoredKey]; done {
		return nil
	}
	d := plan.PlanPreDownload(cs, revs.update, revs.template(revs.current.Name), revs.template(revs.update.Name))
	switch {
	case d.Wait:
		return nil
	case d.Ignored:
		return r.labelRevision(ctx, revs.update, kruiseappsv1alpha1.ImagePreDownloadIgnoredKey)
	}
	var errs []error
	for _, job := range d.Jobs {
		errs = append(errs, r.createPreDownloadJob(ctx, cs, job))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return r.labelRevision(ctx, revs.update, kruiseappsv1alpha1.ImagePreDownloadCreatedKey)
}

func (r *Reconciler) createPreDownloadJob(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, job *kruiseappsv1alpha1.ImagePullJob) error {
	err := r.Client.Create(ctx, job)
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, "FailedCreateImagePullJob", "PreDownload",
			"failed to create ImagePullJob %s: %v", job.Name, err)
		return fmt.Errorf("create ImagePullJob %s: %w", job.Name, err)
	}
	r.Recorder.Eventf(cs, job, corev1.EventTypeNormal, "CreatedImagePullJob", "PreDownload",
		"created ImagePullJob %s for image: %s", job.Name, job.Spec.Image)
	return nil
}

// labelRevision marks the revision's pre-download as decided, so that it is decided once.
func (r *Reconciler) labelRevision(ctx context.Context, cr *appsv1.ControllerRevision, key string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, key)
	if err := r.Client.Patch(ctx, cr, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("label revision %s: %w", cr.Name, err)
	}
	return nil
}

// deletePreDownloadJobs removes the CloneSet's pre-download jobs once every pod runs one revision.
func (r *Reconciler) deletePreDownloadJobs(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet) error {
	jobs := &kruiseappsv1alpha1.ImagePullJobList{}
	if err := r.Client.List(ctx, jobs, client.InNamespace(cs.Namespace), client.MatchingLabels(cs.Spec.Selector.MatchLabels)); err != nil {
		return fmt.Errorf("list ImagePullJobs: %w", err)
	}
	var errs []error
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if ref := metav1.GetControllerOf(job); ref == nil || ref.UID != cs.UID {
			continue
		}
		if err := r.Client.Delete(ctx, job); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("delete ImagePullJob %s: %w", job.Name, err))
		}
	}
	return errors.Join(errs...)
}
