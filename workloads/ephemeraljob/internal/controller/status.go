package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/ephemeraljob/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/statuspatch"
)

// writeStatus replaces the job's status with next when it changed, then records the transitions as events
// and counts a finished job.
func (r *Reconciler) writeStatus(ctx context.Context, job *kruiseappsv1alpha1.EphemeralJob, next kruiseappsv1alpha1.EphemeralJobStatus) error {
	if equality.Semantic.DeepEqual(job.Status, next) {
		return nil
	}
	old := job.Status
	job.Status = next
	if err := statuspatch.Write(ctx, r.Client, job, old, next); err != nil {
		return err
	}
	for _, e := range plan.Events(&old, &next) {
		r.Recorder.Eventf(job, nil, e.Type, e.Reason, "Reconcile", "%s", e.Note)
	}
	if old.CompletionTime == nil && next.CompletionTime != nil {
		finished.WithLabelValues(string(next.Phase)).Inc()
	}
	return nil
}
