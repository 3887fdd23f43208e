package rollout

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
)

// ensureMetadata gives a Rollout its finalizer (unless it is being deleted) and the rollouts.kruise.io/hash
// annotation of its current strategy, which clients compare with status.rolloutHash to know whether the
// status describes the current spec. Both go in one patch, guarded by resourceVersion so a finalizer added by
// someone else since the read is never dropped; wrote reports whether it wrote.
func (r *Reconciler) ensureMetadata(ctx context.Context, ro *rolloutsv1beta1.Rollout) (wrote bool, err error) {
	orig := ro.DeepCopy()
	changed := false
	if ro.DeletionTimestamp.IsZero() {
		changed = controllerutil.AddFinalizer(ro, rolloutsv1beta1.RolloutFinalizer)
	}
	if hash := plan.RolloutHash(ro.Spec.Strategy); hash != "" && ro.Annotations[rolloutsv1beta1.RolloutHashAnnotation] != hash {
		setAnnotation(ro, rolloutsv1beta1.RolloutHashAnnotation, hash)
		changed = true
	}
	if !changed {
		return false, nil
	}
	err = r.Client.Patch(ctx, ro, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("writing the finalizer and hash annotation: %w", err)
	}
	if err != nil {
		return false, nil
	}
	r.written.Record(ro.UID, orig.ResourceVersion)
	return true, nil
}
