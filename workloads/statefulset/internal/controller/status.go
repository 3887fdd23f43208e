package controller

import (
	"context"
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/statuspatch"
)

// writeStatus recomputes the status from the pods the reconcile started with (the next reconcile, woken by
// the pod events, sees the writes it made) and patches it when it changed. observedGeneration moves only
// when the step observed the spec (observed); syncErr is the failure to report. A pod passing minReadySeconds
// later asks for a reconcile then.
func (r *Reconciler) writeStatus(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, in plan.Input, syncErr error, observed bool) error {
	next := set.Status.DeepCopy()
	c := plan.Count(in)
	w.wakeIn(c.Wait)
	next.Replicas, next.ReadyReplicas, next.AvailableReplicas = c.Replicas, c.Ready, c.Available
	next.CurrentReplicas, next.UpdatedReplicas = c.Current, c.Updated
	next.UpdatedReadyReplicas, next.UpdatedAvailableReplicas = c.UpdatedReady, c.UpdatedAvailable
	next.CurrentRevision, next.UpdateRevision = c.CurrentRevision, in.UpdateRevision
	next.CollisionCount = ptr.To(ptr.Deref(set.Status.CollisionCount, 0))
	next.LabelSelector = w.selector.String()
	next.VolumeClaims = plan.VolumeClaims(set.Name, set.Spec.VolumeClaimTemplates, ordinals(set, w.pods), w.claims)
	if observed {
		next.ObservedGeneration = set.Generation
	}
	if !apierrors.IsConflict(syncErr) {
		// A lost write race is retried at once: it is no failure to report.
		createErr, updateErr := splitFailure(syncErr)
		setFailure(next, kruiseappsv1beta1.FailedCreatePod, createErr, r.Clock.Now())
		setFailure(next, kruiseappsv1beta1.FailedUpdatePod, updateErr, r.Clock.Now())
	}
	if equality.Semantic.DeepEqual(&set.Status, next) {
		return nil
	}
	return r.patchStatus(ctx, set, *next)
}

func ordinals(set *kruiseappsv1beta1.StatefulSet, pods []*corev1.Pod) []int32 {
	out := make([]int32, 0, len(pods))
	for _, p := range pods {
		if n := plan.Ordinal(set.Name, p.Name); n >= 0 {
			out = append(out, n)
		}
	}
	return out
}

// patchStatus replaces the set's status with next. It writes the whole status (a diff would leave out the
// counters that stay 0, which the schema requires) and removes the fields next omits when empty, which a
// merge patch would keep.
func (r *Reconciler) patchStatus(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, next kruiseappsv1beta1.StatefulSetStatus) error {
	old := set.Status
	set.Status = next
	return statuspatch.Write(ctx, r.Client, set, old, next)
}

// failed records a failure that stopped the reconcile before any pod was touched: a condition and a Warning
// event with the condition's type as reason.
func (r *Reconciler) failed(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, t appsv1.StatefulSetConditionType, cause error) error {
	r.Recorder.Eventf(set, nil, corev1.EventTypeWarning, string(t), "Reconcile", "%v", cause)
	next := set.Status.DeepCopy()
	setFailure(next, t, cause, r.Clock.Now())
	if equality.Semantic.DeepEqual(&set.Status, next) {
		return cause
	}
	return errors.Join(cause, r.patchStatus(ctx, set, *next))
}

// failure is a step's error with the condition that reports it.
type failure struct {
	condition appsv1.StatefulSetConditionType
	err       error
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// failedAs marks a step's error (nil stays nil) as reported by condition t.
func failedAs(t appsv1.StatefulSetConditionType, err error) error {
	if err == nil {
		return nil
	}
	return &failure{condition: t, err: err}
}

// splitFailure sorts a step's error into the FailedCreatePod and FailedUpdatePod conditions.
func splitFailure(err error) (createErr, updateErr error) {
	var f *failure
	if errors.As(err, &f) && f.condition == kruiseappsv1beta1.FailedCreatePod {
		return err, nil
	}
	return nil, err
}

// setFailure sets condition t True with the error's message, or removes it when err is nil; the same failure
// again keeps its time.
func setFailure(s *kruiseappsv1beta1.StatefulSetStatus, t appsv1.StatefulSetConditionType, err error, now time.Time) {
	i := conditionIndex(s, t)
	if err == nil {
		if i >= 0 {
			s.Conditions = append(s.Conditions[:i:i], s.Conditions[i+1:]...)
		}
		return
	}
	c := appsv1.StatefulSetCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now), Message: err.Error()}
	switch {
	case i < 0:
		s.Conditions = append(s.Conditions, c)
	case s.Conditions[i].Message != c.Message:
		s.Conditions[i] = c
	}
}

func conditionIndex(s *kruiseappsv1beta1.StatefulSetStatus, t appsv1.StatefulSetConditionType) int {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return i
		}
	}
	return -1
}
