package plan

import (
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/predownload"
)

var cloneSetKind = kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet")

// PreDownloadWorkload is what the image pre-download reads of a CloneSet, as upstream reads it: none for
// ReCreate, which never updates in place, for predownload.MinReplicas replicas or fewer, or when partition 0 and
// maxUnavailable covering the replicas update every pod in one batch.
func PreDownloadWorkload(cs *kruiseappsv1alpha1.CloneSet) predownload.Workload {
	st := Resolve(cs)
	return predownload.Workload{
		Owner: cs, Kind: cloneSetKind, Selector: cs.Spec.Selector, Template: &cs.Spec.Template, Replicas: st.Replicas,
		Skip: st.Type == kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType || st.Replicas <= predownload.MinReplicas ||
			st.Partition == 0 && st.MaxUnavailable >= st.Replicas,
		UpdatedReady: cs.Status.UpdatedReadyReplicas,
	}
}
