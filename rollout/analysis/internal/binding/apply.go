package binding

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

// terminatePatch sets a run's spec.terminate, the one spec field the AnalysisRun webhook lets change.
var terminatePatch = client.RawPatch(types.MergePatchType, []byte(`{"spec":{"terminate":true}}`))

// apply carries out the plan: runs created (a run that already exists was created by an earlier reconcile
// whose write the cache had not shown yet), runs terminated, the status written when it changed, and then
// the events of the transitions it records.
func (r *Reconciler) apply(ctx context.Context, ra *analysisv1alpha1.RolloutAnalysis, p *Plan) error {
	for _, run := range p.Create {
		if err := r.Client.Create(ctx, run); apierrors.IsAlreadyExists(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("creating AnalysisRun %s: %w", run.Name, err)
		}
		step := stepOf(run)
		runsCreated.WithLabelValues(runKind(step)).Inc()
		r.Recorder.Eventf(ra, run, corev1.EventTypeNormal, ReasonRunCreated, "Create",
			"Created AnalysisRun %s for %s of revision %s", run.Name, stepName(step), p.Status.CanaryRevision)
	}
	for _, name := range p.Terminate {
		run := &analysisv1alpha1.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Namespace: ra.Namespace, Name: name}}
		if err := r.Client.Patch(ctx, run, terminatePatch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("terminating AnalysisRun %s: %w", name, err)
		}
	}
	if err := r.writeStatus(ctx, ra, &p.Status); err != nil {
		return err
	}
	for _, e := range p.Events {
		r.Recorder.Eventf(ra, nil, e.Type, e.Reason, "Analyse", "%s", e.Note)
	}
	return nil
}

// writeStatus writes status when it changed, guarded by the resourceVersion: a reconcile that read a stale
// RolloutAnalysis loses (a conflict) instead of writing an older view, or recording its events twice.
func (r *Reconciler) writeStatus(ctx context.Context, ra *analysisv1alpha1.RolloutAnalysis, status *analysisv1alpha1.RolloutAnalysisStatus) error {
	if equality.Semantic.DeepEqual(ra.Status, *status) {
		return nil
	}
	patch := client.MergeFromWithOptions(ra.DeepCopy(), client.MergeFromWithOptimisticLock{})
	ra.Status = *status
	if err := r.Client.Status().Patch(ctx, ra, patch); err != nil {
		return fmt.Errorf("writing the RolloutAnalysis's status: %w", err)
	}
	return nil
}
