package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/daemonset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/statuspatch"
)

// Reasons of the Stalled condition, which are also the reasons of the Warning events of the same failures.
const (
	reasonFailedCreate    = "FailedCreate"
	reasonFailedDelete    = "FailedDelete"
	reasonFailedUpdate    = "FailedUpdate"
	reasonInvalidSelector = "InvalidSelector"
	reasonSelectingAll    = "SelectingAll"
)

// writeStatus computes upstream's status from the world the reconcile started with (its writes show in the
// next one) and patches it when it changed; observedGeneration moves only when observed. It returns how
// soon a ready pod becomes available, for the status to count it.
func (r *Reconciler) writeStatus(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, w *world, syncErr error, observed bool) (time.Duration, error) {
	c := plan.Count(w.in)
	next := ds.Status.DeepCopy()
	next.DesiredNumberScheduled, next.CurrentNumberScheduled, next.NumberMisscheduled = c.Desired, c.Current, c.Misscheduled
	next.NumberReady, next.UpdatedNumberScheduled, next.NumberAvailable = c.Ready, c.Updated, c.Available
	next.NumberUnavailable = c.Unavailable()
	next.DaemonSetHash = w.revs.hash
	if observed {
		next.ObservedGeneration = ds.Generation
	}
	next.Conditions = plan.Conditions(next.Conditions, plan.ProgressOf(w.in, c, failureOf(syncErr)), r.Clock.Now())
	if equality.Semantic.DeepEqual(&ds.Status, next) {
		return plan.Pending(w.in), nil
	}
	return plan.Pending(w.in), r.patchStatus(ctx, ds, *next)
}

// failed reports a failure that stopped the reconcile before it could plan: a Stalled condition and a
// Warning event; an invalid selector is terminal until the spec changes.
func (r *Reconciler) failed(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, cause error) error {
	f := failureOf(cause)
	if errors.Is(cause, errInvalidSelector) {
		f.Reason = reasonInvalidSelector
		if ds.Spec.Selector != nil && len(ds.Spec.Selector.MatchLabels)+len(ds.Spec.Selector.MatchExpressions) == 0 {
			f.Reason = reasonSelectingAll
		}
	}
	r.Recorder.Eventf(ds, nil, corev1.EventTypeWarning, f.Reason, "Reconcile", "%s", f.Message)
	next := ds.Status.DeepCopy()
	progress := plan.Progress{Counts: plan.Counts{
		Desired: ds.Status.DesiredNumberScheduled, Current: ds.Status.CurrentNumberScheduled, Available: ds.Status.NumberAvailable,
		Updated: ds.Status.UpdatedNumberScheduled,
	}, Target: int(ds.Status.DesiredNumberScheduled), Failure: f}
	next.Conditions = plan.Conditions(next.Conditions, progress, r.Clock.Now())
	if equality.Semantic.DeepEqual(&ds.Status, next) {
		return cause
	}
	return errors.Join(cause, r.patchStatus(ctx, ds, *next))
}

// failure is a step's error with the reason that reports it.
type failure struct {
	reason string
	err    error
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// failedAs marks a step's error (nil stays nil) with the reason that reports it.
func failedAs(reason string, err error) error {
	if err == nil {
		return nil
	}
	return &failure{reason: reason, err: err}
}

// failureOf is the Stalled condition's content for an error; nil for none.
func failureOf(err error) *plan.Failure {
	if err == nil {
		return nil
	}
	var f *failure
	if errors.As(err, &f) {
		return &plan.Failure{Reason: f.reason, Message: err.Error()}
	}
	return &plan.Failure{Reason: "ReconcileError", Message: err.Error()}
}

// patchStatus replaces the DaemonSet's status with next: the whole status, and null for each field next
// leaves out (a count of 0 omitted, as upstream writes it), which a merge patch would otherwise keep.
func (r *Reconciler) patchStatus(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, next kruiseappsv1alpha1.DaemonSetStatus) error {
	old := ds.Status
	ds.Status = next
	return statuspatch.Write(ctx, r.Client, ds, old, next)
}
