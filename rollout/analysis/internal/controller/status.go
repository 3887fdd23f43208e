package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

// Reasons of the events on a run.
const (
	// ReasonStarted: the run started measuring.
	ReasonStarted = "AnalysisRunStarted"
	// ReasonMetricCompleted: a metric reached its final phase (the note says which).
	ReasonMetricCompleted = "MetricCompleted"
	// The run's final phases, one reason each.
	ReasonSuccessful   = "AnalysisSuccessful"
	ReasonFailed       = "AnalysisFailed"
	ReasonInconclusive = "AnalysisInconclusive"
	ReasonError        = "AnalysisError"
)

var finalReasons = map[analysisv1alpha1.AnalysisPhase]string{
	analysisv1alpha1.AnalysisPhaseSuccessful:   ReasonSuccessful,
	analysisv1alpha1.AnalysisPhaseFailed:       ReasonFailed,
	analysisv1alpha1.AnalysisPhaseInconclusive: ReasonInconclusive,
	analysisv1alpha1.AnalysisPhaseError:        ReasonError,
}

// writeStatus writes status when it changed, guarded by the run's resourceVersion: a reconcile that read a
// stale run loses (a conflict) instead of recording its measurements over newer ones.
func (r *Reconciler) writeStatus(ctx context.Context, run *analysisv1alpha1.AnalysisRun, status *analysisv1alpha1.AnalysisRunStatus) error {
	if equality.Semantic.DeepEqual(run.Status, *status) {
		return nil
	}
	patch := client.MergeFromWithOptions(run.DeepCopy(), client.MergeFromWithOptimisticLock{})
	old := run.Status
	run.Status = *status
	if err := r.Client.Status().Patch(ctx, run, patch); err != nil {
		run.Status = old
		return fmt.Errorf("writing the AnalysisRun's status: %w", err)
	}
	return nil
}

// recordTransitions records, once the status holding them is written, the events of what changed since
// before (run.Status is the written status; before is what the reconcile read) and the counters.
func (r *Reconciler) recordTransitions(run *analysisv1alpha1.AnalysisRun, before *analysisv1alpha1.AnalysisRunStatus, taken []measured) {
	for _, m := range taken {
		measurements.WithLabelValues(m.provider, string(m.phase)).Inc()
	}
	after := &run.Status
	if before.StartedAt == nil && after.StartedAt != nil && !after.Phase.Completed() {
		r.Recorder.Eventf(run, nil, corev1.EventTypeNormal, ReasonStarted, "Measure", "Measuring %d metrics", len(after.MetricResults))
	}
	for _, res := range after.MetricResults {
		if !res.Phase.Completed() || phaseOf(before, res.Name).Completed() {
			continue
		}
		r.Recorder.Eventf(run, nil, eventType(res.Phase), ReasonMetricCompleted, "Measure", "Metric %s %s: %s", res.Name, res.Phase, res.Message)
	}
	if after.Phase.Completed() && !before.Phase.Completed() {
		runs.WithLabelValues(string(after.Phase)).Inc()
		r.Recorder.Eventf(run, nil, eventType(after.Phase), finalReasons[after.Phase], "Complete", "%s", after.Message)
	}
}

func phaseOf(status *analysisv1alpha1.AnalysisRunStatus, metric string) analysisv1alpha1.AnalysisPhase {
	for _, res := range status.MetricResults {
		if res.Name == metric {
			return res.Phase
		}
	}
	return ""
}

func eventType(p analysisv1alpha1.AnalysisPhase) string {
	if p == analysisv1alpha1.AnalysisPhaseSuccessful {
		return corev1.EventTypeNormal
	}
	return corev1.EventTypeWarning
}
