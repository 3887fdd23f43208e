package predownload

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Syncer writes what Plan decides for a workload. A module holds one while its gate is on; a nil Syncer does
// nothing.
type Syncer struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// New is the Syncer of a module whose gate is on (nil when off), writing through c and recording on rec.
func New(on bool, c client.Client, rec events.EventRecorder) *Syncer {
	if !on {
		return nil
	}
	return &Syncer{Client: c, Recorder: rec}
}

// Revisions are where a workload's pods stand.
type Revisions struct {
	// Update is the update revision, New its template.
	Update *appsv1.ControllerRevision
	New    *corev1.PodTemplateSpec
	// Olds are the known templates the pods not yet updated run.
	Olds []*corev1.PodTemplateSpec
	// Settled says every pod runs the update revision.
	Settled bool
}

// FromCurrent are the revisions of a workload whose old pods run one current revision, with templateOf the
// template of a revision by name (nil when unknown).
func FromCurrent(current, update *appsv1.ControllerRevision, templateOf func(name string) *corev1.PodTemplateSpec) Revisions {
	return Revisions{Update: update, New: templateOf(update.Name), Olds: []*corev1.PodTemplateSpec{templateOf(current.Name)},
		Settled: current.Name == update.Name}
}

// Sync creates the jobs of the update revision while the workload moves to it (see Plan), and labels the
// revision once decided, so that it is decided once. Once the workload is settled, its jobs go.
func (s *Syncer) Sync(ctx context.Context, w Workload, revs Revisions) error {
	switch {
	case s == nil:
		return nil
	case revs.Settled:
		return s.deleteJobs(ctx, w)
	case decided(revs.Update):
		return nil
	}
	update := revs.Update
	d := Plan(w, update, revs.Olds, revs.New)
	switch {
	case d.Wait:
		return nil
	case d.Ignored:
		return s.labelRevision(ctx, update, kruiseappsv1alpha1.ImagePreDownloadIgnoredKey)
	}
	var errs []error
	for _, job := range d.Jobs {
		errs = append(errs, s.createJob(ctx, w, job))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return s.labelRevision(ctx, update, kruiseappsv1alpha1.ImagePreDownloadCreatedKey)
}

// decided reports whether the revision's pre-download was already created or ignored.
func decided(update *appsv1.ControllerRevision) bool {
	_, created := update.Labels[kruiseappsv1alpha1.ImagePreDownloadCreatedKey]
	_, ignored := update.Labels[kruiseappsv1alpha1.ImagePreDownloadIgnoredKey]
	return created || ignored
}

func (s *Syncer) createJob(ctx context.Context, w Workload, job *kruiseappsv1alpha1.ImagePullJob) error {
	err := s.Client.Create(ctx, job)
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		s.Recorder.Eventf(w.Owner, nil, corev1.EventTypeWarning, "FailedCreateImagePullJob", "PreDownload",
			"failed to create ImagePullJob %s: %v", job.Name, err)
		return fmt.Errorf("create ImagePullJob %s: %w", job.Name, err)
	}
	s.Recorder.Eventf(w.Owner, job, corev1.EventTypeNormal, "CreatedImagePullJob", "PreDownload",
		"created ImagePullJob %s for image: %s", job.Name, job.Spec.Image)
	return nil
}

// labelRevision marks the revision's pre-download as decided.
func (s *Syncer) labelRevision(ctx context.Context, cr *appsv1.ControllerRevision, key string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, key)
	if err := s.Client.Patch(ctx, cr, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("label revision %s: %w", cr.Name, err)
	}
	return nil
}

// deleteJobs removes the workload's pre-download jobs: they carry its template's labels, so its selector finds
// them, and its controller reference tells them from others'.
func (s *Syncer) deleteJobs(ctx context.Context, w Workload) error {
	jobs := &kruiseappsv1alpha1.ImagePullJobList{}
	if err := s.Client.List(ctx, jobs, client.InNamespace(w.Owner.GetNamespace()), client.MatchingLabels(w.Selector.MatchLabels)); err != nil {
		return fmt.Errorf("list ImagePullJobs: %w", err)
	}
	var errs []error
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if ref := metav1.GetControllerOf(job); ref == nil || ref.UID != w.Owner.GetUID() {
			continue
		}
		if err := s.Client.Delete(ctx, job); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("delete ImagePullJob %s: %w", job.Name, err))
		}
	}
	return errors.Join(errs...)
}
