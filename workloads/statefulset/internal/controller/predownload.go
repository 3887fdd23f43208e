package controller

import (
	appsv1 "k8s.io/api/apps/v1"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/predownload"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/plan"
)

// preDownloadWorkload is what the pre-download reads of a set, as upstream reads it: none unless a
// RollingUpdate's podUpdatePolicy is InPlaceIfPossible or InPlaceOnly (unset is ReCreate), for
// predownload.MinReplicas replicas or fewer, or when partition 0 and maxUnavailable covering the replicas update
// every pod in one batch; updated ready pods count only once the status names the update revision.
func (r *Reconciler) preDownloadWorkload(set *kruiseappsv1beta1.StatefulSet, update *appsv1.ControllerRevision) predownload.Workload {
	st := plan.Resolve(&set.Spec, r.StartOrdinal)
	ru := set.Spec.UpdateStrategy.RollingUpdate
	inPlace := !st.OnDelete && ru != nil && (ru.PodUpdatePolicy == kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType ||
		ru.PodUpdatePolicy == kruiseappsv1beta1.InPlaceOnlyPodUpdateStrategyType)
	w := predownload.Workload{
		Owner: set, Kind: setKind, Selector: set.Spec.Selector, Template: &set.Spec.Template, Replicas: st.Replicas,
		Skip: !inPlace || st.Replicas <= predownload.MinReplicas || st.Partition == 0 && st.MaxUnavailable >= st.Replicas,
	}
	if set.Status.UpdateRevision == update.Name {
		w.UpdatedReady = set.Status.UpdatedReadyReplicas
	}
	return w
}
