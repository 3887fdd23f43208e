package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/predownload"
)

// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagepulljobs,verbs=get;list;watch;create;delete

// preDownload runs the image pre-download for in-place updates (feature gate PreDownloadImageForInPlaceUpdate).
func (r *Reconciler) preDownload(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, revs *revisions) error {
	if !r.PreDownloadImages {
		return nil
	}
	s := predownload.Syncer{Client: r.Client, Recorder: r.Recorder}
	olds := []*corev1.PodTemplateSpec{revs.template(revs.current.Name)}
	return s.Sync(ctx, plan.PreDownloadWorkload(cs), revs.current.Name == revs.update.Name, revs.update, olds,
		revs.template(revs.update.Name))
}
