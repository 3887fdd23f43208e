package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/statuspatch"
)

// writeStatus recomputes the status from the pods the reconcile started with (the next reconcile, woken
// by the pod events, sees the writes it made) and patches it when it changed. observedGeneration moves
// only when the step observed the spec (observed); syncErr is the failure to report. It returns when to look
// again for pods passing minReadySeconds.
func (r *Reconciler) writeStatus(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, in plan.Input, syncErr error, observed bool) (time.Duration, error) {
	next := cs.Status.DeepCopy()
	requeue := plan.Counts(in, next)
	w.wakeIn(plan.Progress(cs, next, r.Clock.Now()))
	r.recordDeadline(cs, next)
	next.LabelSelector = w.selector.String()
	if observed {
		next.ObservedGeneration = cs.Generation
	}
	if !apierrors.IsConflict(syncErr) {
		// A lost write race is retried at once: it is no failure to report.
		scaleErr, updateErr := splitFailure(syncErr)
		setFailure(next, kruiseappsv1alpha1.CloneSetConditionFailedScale, scaleErr, r.Clock.Now())
		setFailure(next, kruiseappsv1alpha1.CloneSetConditionFailedUpdate, updateErr, r.Clock.Now())
	}
	if equality.Semantic.DeepEqual(&cs.Status, next) {
		return requeue, nil
	}
	return requeue, r.patchStatus(ctx, cs, *next)
}

// recordDeadline sends a Warning event when the CloneSet's update has just run past its progress deadline.
func (r *Reconciler) recordDeadline(cs *kruiseappsv1alpha1.CloneSet, next *kruiseappsv1alpha1.CloneSetStatus) {
	exceeded := func(s *kruiseappsv1alpha1.CloneSetStatus) *kruiseappsv1alpha1.CloneSetCondition {
		c := plan.Condition(s, kruiseappsv1alpha1.CloneSetConditionTypeProgressing)
		if c == nil || c.Reason != string(kruiseappsv1alpha1.CloneSetProgressDeadlineExceeded) {
			return nil
		}
		return c
	}
	if c, old := exceeded(next), exceeded(&cs.Status); c != nil && (old == nil || old.Message != c.Message) {
		r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, c.Reason, "Update", "%s", c.Message)
	}
}

// patchStatus replaces cs's status with next. It writes the whole status (a diff against the old one would
// leave out the counters that stay 0, which the schema requires) and removes the fields next omits when
// empty (updatedAvailableReplicas 0 is absent, as upstream writes it), which a merge patch would keep.
func (r *Reconciler) patchStatus(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, next kruiseappsv1alpha1.CloneSetStatus) error {
	old := cs.Status
	cs.Status = next
	return statuspatch.Write(ctx, r.Client, cs, old, next)
}

// failed records a failure that stopped the reconcile before any pod was touched: a condition and a
// Warning event with the condition's type as reason.
func (r *Reconciler) failed(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, t kruiseappsv1alpha1.CloneSetConditionType, cause error) error {
	r.Recorder.Eventf(cs, nil, corev1.EventTypeWarning, string(t), "Reconcile", "%v", cause)
	next := cs.Status.DeepCopy()
	setFailure(next, t, cause, r.Clock.Now())
	return errors.Join(cause, r.patchStatus(ctx, cs, *next))
}

// failure is a step's error with the condition that reports it.
type failure struct {
	condition kruiseappsv1alpha1.CloneSetConditionType
	err       error
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// failedAs marks a step's error (nil stays nil) as reported by condition t.
func failedAs(t kruiseappsv1alpha1.CloneSetConditionType, err error) error {
	if err == nil {
		return nil
	}
	return &failure{condition: t, err: err}
}

// splitFailure sorts a step's error into the FailedScale and FailedUpdate conditions.
func splitFailure(err error) (scaleErr, updateErr error) {
	var f *failure
	if errors.As(err, &f) && f.condition == kruiseappsv1alpha1.CloneSetConditionFailedScale {
		return err, nil
	}
	return nil, err
}

// setFailure sets condition t True with the error's message, or removes it when err is nil. The same failure
// again keeps its times.
func setFailure(s *kruiseappsv1alpha1.CloneSetStatus, t kruiseappsv1alpha1.CloneSetConditionType, err error, now time.Time) {
	if err == nil {
		plan.RemoveCondition(s, t)
		return
	}
	if c := plan.Condition(s, t); c != nil && c.Message == err.Error() {
		return
	}
	at := metav1.NewTime(now)
	plan.SetCondition(s, kruiseappsv1alpha1.CloneSetCondition{Type: t, Status: corev1.ConditionTrue,
		LastUpdateTime: at, LastTransitionTime: at, Message: err.Error()})
}
