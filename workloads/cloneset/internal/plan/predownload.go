package plan

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/predownload"
)

var cloneSetKind = kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet")

// PreDownloadWorkload is what the image pre-download reads of a CloneSet: ReCreate never updates in place, and
// partition 0 with maxUnavailable covering the replicas updates every pod in one batch.
func PreDownloadWorkload(cs *kruiseappsv1alpha1.CloneSet) predownload.Workload {
	st := Resolve(cs)
	return predownload.Workload{
		Owner: cs, Kind: cloneSetKind, Selector: cs.Spec.Selector, Template: &cs.Spec.Template, Replicas: st.Replicas,
		InPlace:      st.Type != kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType,
		OneBatch:     st.Partition == 0 && st.MaxUnavailable >= st.Replicas,
		UpdatedReady: cs.Status.UpdatedReadyReplicas,
	}
}

// PlanPreDownload is the pre-download decision for an in-place update of cs from the current template oldT to
// the update revision's newT.
func PlanPreDownload(cs *kruiseappsv1alpha1.CloneSet, update *appsv1.ControllerRevision, oldT, newT *corev1.PodTemplateSpec) predownload.Decision {
	return predownload.Plan(PreDownloadWorkload(cs), update, oldT, newT)
}
