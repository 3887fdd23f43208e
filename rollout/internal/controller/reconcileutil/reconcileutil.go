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

// StaleRecheck is how soon a reconcile that found its cache not yet showing the controller's own last write
// looks again. The write's watch event wakes it as soon as the cache shows it, so this is only a safety net:
// polling at ConflictRetry instead re-ran the reconcile ten times a second per object for as long as an API
// server loaded by the releases themselves lagged.
const StaleRecheck = time.Second

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
	if !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	return PatchFinalizers(ctx, c, obj, func(o client.Object) bool { return controllerutil.AddFinalizer(o, finalizer) })
}

// RemoveFinalizer removes finalizer from obj; an object already gone is fine.
func RemoveFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string) error {
	return PatchFinalizers(ctx, c, obj, func(o client.Object) bool { return controllerutil.RemoveFinalizer(o, finalizer) })
}

// PatchFinalizers applies change to obj's finalizers and writes them if it changed anything. A merge patch
// replaces the whole list, so it is guarded by resourceVersion: a finalizer someone else added since the read
// is never dropped; the conflict makes the caller retry.
func PatchFinalizers(ctx context.Context, c client.Client, obj client.Object, change func(client.Object) bool) error {
	orig, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %T", obj)
	}
	if !change(obj) {
		return nil
	}
	err := c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("updating the finalizers of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
