package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/daemonset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/predownload"
)

// preDownload runs the image pre-download for updates (feature gate PreDownloadImageForDaemonSetUpdate): as
// upstream's, it pulls the changed images whether the update is made in place or recreates pods, whose
// replacements come back on the same nodes; once every node runs the update revision the jobs go.
func (r *Reconciler) preDownload(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, w *world) error {
	if r.preDownloads == nil {
		return nil // the gate is off: skip counting the nodes
	}
	c := plan.Count(w.in)
	revs := predownload.Revisions{Update: w.revs.update, New: &ds.Spec.Template, Olds: oldTemplates(w), Settled: c.Updated == c.Desired}
	return r.preDownloads.Sync(ctx, preDownloadWorkload(ds, w.in.Strategy, c), revs)
}

// preDownloadWorkload is what the pre-download reads of a DaemonSet: none for OnDelete, or when partition 0 and
// maxUnavailable covering the nodes update every pod in one batch.
func preDownloadWorkload(ds *kruiseappsv1alpha1.DaemonSet, st plan.Strategy, c plan.Counts) predownload.Workload {
	return predownload.Workload{
		Owner: ds, Kind: plan.Kind, Selector: ds.Spec.Selector, Template: &ds.Spec.Template, Replicas: c.Desired,
		Skip:      !st.Rolling || st.Partition == 0 && st.MaxUnavailable >= int(c.Desired),
		AnyChange: true, UpdatedReady: c.UpdatedReady,
	}
}

// oldTemplates are the known templates of the pods not on the update revision.
func oldTemplates(w *world) []*corev1.PodTemplateSpec {
	seen := map[string]bool{}
	var out []*corev1.PodTemplateSpec
	for _, p := range w.pods {
		hash := p.Labels[plan.HashLabel]
		if t := w.revs.templates[hash]; t != nil && !seen[hash] && !w.in.Revision.Updated(p) {
			seen[hash] = true
			out = append(out, t)
		}
	}
	return out
}
