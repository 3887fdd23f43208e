// Package reconcileutil holds the small pieces every engine reconciler shares.
package reconcileutil

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ConflictRetry is how soon a reconcile whose write lost a race (an approval, a concurrent patch) runs again.
const ConflictRetry = 100 * time.Millisecond

// RetryConflicts turns a lost optimistic-lock race into a quick requeue: the next reconcile starts from what
// the other writer wrote, and nothing is logged as an error. Other errors pass through.
func RetryConflicts(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: ConflictRetry}, nil
	}
	return reconcile.Result{}, err
}

// EnsureFinalizer adds finalizer to obj unless obj is being deleted or already has it.
func EnsureFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string) error {
	if !obj.GetDeletionTimestamp().IsZero() || controllerutil.ContainsFinalizer(obj, finalizer) {
		return nil
	}
	orig, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %T", obj)
	}
	controllerutil.AddFinalizer(obj, finalizer)
	if err := c.Patch(ctx, obj, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("adding finalizer: %w", err)
	}
	return nil
}
