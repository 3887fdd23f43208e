package rollout

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/reconcileutil"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/jsonpatch"
)

// apply carries out a decision: workload metadata, BatchRelease, status, events, finalizer — in that
// order, so that the status never claims what has not been done.
func (r *Reconciler) apply(ctx context.Context, ro *rolloutsv1beta1.Rollout, obs observation, d *plan.RolloutDecision) error {
	// Read before the status write, which leaves ro holding the new status.
	started := releaseStarted(ro.Status)
	if obs.workload != nil {
		if err := r.syncWorkloadMetadata(ctx, ro, obs.workload.Object, d.ReleaseWorkload, obs.world.Deleting); err != nil {
			return err
		}
	}
	if err := r.syncBatch(ctx, ro, obs.batch, d); err != nil {
		return err
	}
	if wait := r.progress.Hold(ro.UID, countersOnly(ro.Status, d.Status), r.Clock.Now()); wait > 0 {
		d.RequeueAfter = plan.Soonest(d.RequeueAfter, wait)
		d.Status = ro.Status
	}
	if err := r.patchStatus(ctx, ro, d.Status); err != nil {
		return err
	}
	if err := r.syncTrafficRoutingRef(ctx, ro, d.Status); err != nil {
		return err
	}
	if len(d.Events) > 0 {
		// One event per decision: the events API folds events of the same reason and action recorded in the
		// same moment into one series, keeping the first note only.
		r.Recorder.Eventf(ro, nil, corev1.EventTypeNormal, "Progressing", "Reconcile", "%s", strings.Join(d.Events, "; "))
	}
	r.Metrics.ReleaseFinished(d.Finished, started, r.Clock.Now())
	r.Metrics.Releasing(client.ObjectKeyFromObject(ro), d.Status.Phase == rolloutsv1beta1.RolloutPhaseProgressing)
	if d.Finished != "" {
		r.changes.Forget(ro.UID)
		r.progress.Forget(ro.UID)
	}
	if d.RemoveFinalizer {
		return r.removeFinalizer(ctx, ro)
	}
	return nil
}

// releaseStarted is when the release of status began: its Progressing condition turning True; zero if none.
func releaseStarted(status rolloutsv1beta1.RolloutStatus) time.Time {
	c := plan.GetCondition(status.Conditions, rolloutsv1beta1.RolloutConditionProgressing)
	if c == nil || c.Status != corev1.ConditionTrue {
		return time.Time{}
	}
	return c.LastTransitionTime.Time
}

// syncBatch writes the decision's plan to the BatchRelease, then deletes it if asked: a BatchRelease deleted
// with a finalizing plan finalizes by it.
func (r *Reconciler) syncBatch(ctx context.Context, ro *rolloutsv1beta1.Rollout, br *rolloutsv1beta1.BatchRelease, d *plan.RolloutDecision) error {
	var err error
	switch {
	case d.Plan == nil:
	case br == nil:
		return r.createBatch(ctx, ro, *d.Plan, batchAnnotations(ro, d.Status))
	default:
		err = r.updateBatch(ctx, ro, br, *d.Plan, batchAnnotations(ro, d.Status))
	}
	if err != nil || !d.DeleteBatch || br == nil {
		return err
	}
	return r.deleteBatch(ctx, br)
}

// createBatch creates the BatchRelease with the finalizer its controller would otherwise add by a patch of its
// own: one write, and one reconcile, fewer per release.
func (r *Reconciler) createBatch(ctx context.Context, ro *rolloutsv1beta1.Rollout, p rolloutsv1beta1.ReleasePlan, annotations map[string]string) error {
	br := &rolloutsv1beta1.BatchRelease{
		ObjectMeta: metav1.ObjectMeta{
			Name: ro.Name, Namespace: ro.Namespace,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*ownerRef(ro)},
			Finalizers:      []string{rolloutsv1beta1.BatchReleaseFinalizer},
		},
		Spec: rolloutsv1beta1.BatchReleaseSpec{WorkloadRef: ro.Spec.WorkloadRef, ReleasePlan: p},
	}
	if err := r.Client.Create(ctx, br); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating BatchRelease: %w", err)
	}
	return nil
}

func (r *Reconciler) updateBatch(ctx context.Context, ro *rolloutsv1beta1.Rollout, br *rolloutsv1beta1.BatchRelease, p rolloutsv1beta1.ReleasePlan, want map[string]string) error {
	if equality.Semantic.DeepEqual(br.Spec.ReleasePlan, p) && br.Spec.WorkloadRef == ro.Spec.WorkloadRef &&
		br.Annotations[rolloutsv1beta1.RollbackInBatchAnnotation] == want[rolloutsv1beta1.RollbackInBatchAnnotation] {
		return nil
	}
	orig := br.DeepCopy()
	br.Spec.ReleasePlan, br.Spec.WorkloadRef = p, ro.Spec.WorkloadRef
	setAnnotation(br, rolloutsv1beta1.RollbackInBatchAnnotation, want[rolloutsv1beta1.RollbackInBatchAnnotation])
	if err := r.patchBatch(ctx, orig, br); err != nil {
		return fmt.Errorf("updating BatchRelease: %w", err)
	}
	r.batchWritten.Record(br.UID, orig.ResourceVersion)
	return nil
}

// patchBatch writes br's spec (and annotations) over orig's. The Rollout alone writes a BatchRelease's spec, so
// a test of the generation as read, which the BatchRelease's status writes leave alone, keeps a stale read from
// undoing a newer plan without losing to them. A change of annotations is sent under the resourceVersion.
func (r *Reconciler) patchBatch(ctx context.Context, orig, br *rolloutsv1beta1.BatchRelease) error {
	if !maps.Equal(orig.Annotations, br.Annotations) {
		return r.Client.Patch(ctx, br, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	}
	ops := []jsonpatch.Op{
		jsonpatch.Test("/metadata/uid", orig.UID),
		jsonpatch.Test("/metadata/generation", orig.Generation),
		jsonpatch.Replace("/spec/releasePlan", br.Spec.ReleasePlan),
		jsonpatch.Replace("/spec/workloadRef", br.Spec.WorkloadRef),
	}
	return jsonpatch.Apply(ctx, r.Client, rolloutsv1beta1.Resource("batchreleases"), br, ops)
}

func (r *Reconciler) deleteBatch(ctx context.Context, br *rolloutsv1beta1.BatchRelease) error {
	if !br.DeletionTimestamp.IsZero() {
		return nil
	}
	err := r.Client.Delete(ctx, br, client.Preconditions{UID: &br.UID})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting BatchRelease: %w", err)
	}
	r.batchWritten.Record(br.UID, br.ResourceVersion)
	return nil
}

// batchAnnotations marks the BatchRelease of a rollback in batches (the release of the stable revision
// itself), as upstream copies the Rollout's annotation only then: it leaves the pods already rolled back out
// of the batches, which only that release may do.
func batchAnnotations(ro *rolloutsv1beta1.Rollout, st rolloutsv1beta1.RolloutStatus) map[string]string {
	sub := st.GetSubStatus()
	if !rollbackInBatch(ro) || sub == nil || sub.StableRevision == "" || sub.PodTemplateHash != sub.StableRevision {
		return nil
	}
	return map[string]string{rolloutsv1beta1.RollbackInBatchAnnotation: "true"}
}

func setAnnotation(obj metav1.Object, key, value string) {
	a := obj.GetAnnotations()
	if value == "" {
		delete(a, key)
		return
	}
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	obj.SetAnnotations(a)
}

// patchStatus writes status; an approval or step jump patched since the read makes
// the write fail and the reconcile start again from what the user wrote.
func (r *Reconciler) patchStatus(ctx context.Context, ro *rolloutsv1beta1.Rollout, st rolloutsv1beta1.RolloutStatus) error {
	if equality.Semantic.DeepEqual(ro.Status, st) {
		return nil
	}
	// A full update guarded by resourceVersion: required status fields survive (a merge patch drops unchanged
	// zero values), and a write by someone else since the read is never overwritten.
	replaced := ro.ResourceVersion
	ro.Status = st
	if err := r.Client.Status().Update(ctx, ro); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	r.written.Record(ro.UID, replaced)
	r.progress.Mark(ro.UID, r.Clock.Now())
	return nil
}

// countersOnly reports whether st differs from old only in figures that move while a batch is in flight: the
// pod counters copied from the BatchRelease and, while a step upgrades or the release finalises, the
// workload generation observed, which every annotation the engine's own workload control writes on a
// Deployment bumps. Such changes go out with the next change of state, or after the progress interval.
func countersOnly(old, st rolloutsv1beta1.RolloutStatus) bool {
	if equality.Semantic.DeepEqual(old, st) {
		return false
	}
	a, b := old.DeepCopy(), st.DeepCopy()
	moving := inMotion(st)
	clearCounters(a, moving)
	clearCounters(b, moving)
	return equality.Semantic.DeepEqual(a, b)
}

// inMotion tells whether st is a release between two resting points: a step upgrading its pods, or the
// finalising steps. At a paused step and at the end the generation is written at once, for the scripts that
// wait for it there.
func inMotion(st rolloutsv1beta1.RolloutStatus) bool {
	sub := st.GetSubStatus()
	if st.Phase != rolloutsv1beta1.RolloutPhaseProgressing || sub == nil {
		return false
	}
	return sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateUpgrade ||
		(sub.CurrentStepState == rolloutsv1beta1.CanaryStepStateCompleted && sub.FinalisingStep != "")
}

func clearCounters(s *rolloutsv1beta1.RolloutStatus, generation bool) {
	if c := s.CanaryStatus; c != nil {
		c.CanaryReplicas, c.CanaryReadyReplicas = 0, 0
	}
	if g := s.BlueGreenStatus; g != nil {
		g.UpdatedReplicas, g.UpdatedReadyReplicas = 0, 0
	}
	if sub := s.GetSubStatus(); sub != nil && generation {
		sub.ObservedWorkloadGeneration = 0
	}
}

func (r *Reconciler) removeFinalizer(ctx context.Context, ro *rolloutsv1beta1.Rollout) error {
	return reconcileutil.RemoveFinalizer(ctx, r.Client, ro, rolloutsv1beta1.RolloutFinalizer)
}
