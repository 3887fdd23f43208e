package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/predownload"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/plan"
)

// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagepulljobs,verbs=get;list;watch;create;delete

// preDownload runs the image pre-download for in-place updates (feature gate PreDownloadImageForInPlaceUpdate).
func (r *Reconciler) preDownload(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, revs *revisions) error {
	if !r.PreDownloadImages {
		return nil
	}
	s := predownload.Syncer{Client: r.Client, Recorder: r.Recorder}
	return s.Sync(ctx, r.preDownloadWorkload(set, revs.update), revs.current, revs.update,
		revs.template(revs.current.Name), revs.template(revs.update.Name))
}

// preDownloadWorkload is what the pre-download reads of a set, as upstream reads it: only a RollingUpdate whose
// podUpdatePolicy is InPlaceIfPossible or InPlaceOnly updates in place (unset is ReCreate); partition 0 with maxUnavailable covering the replicas
// updates every pod in one batch; updated ready pods count only once the status names the update revision.
func (r *Reconciler) preDownloadWorkload(set *kruiseappsv1beta1.StatefulSet, update *appsv1.ControllerRevision) predownload.Workload {
	st := plan.Resolve(&set.Spec, r.StartOrdinal)
	ru := set.Spec.UpdateStrategy.RollingUpdate
	w := predownload.Workload{
		Owner: set, Kind: setKind, Selector: set.Spec.Selector, Template: &set.Spec.Template, Replicas: st.Replicas,
		InPlace: !st.OnDelete && ru != nil && (ru.PodUpdatePolicy == kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType ||
			ru.PodUpdatePolicy == kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType),
		OneBatch: st.Partition == 0 && st.MaxUnavailable >= st.Replicas,
	}
	if set.Status.UpdateRevision == update.Name {
		w.UpdatedReady = set.Status.UpdatedReadyReplicas
	}
	return w
}
