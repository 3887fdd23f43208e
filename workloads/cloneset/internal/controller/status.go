package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/plan"
)

// writeStatus recomputes the status from the pods the reconcile started with (the next reconcile, woken
// by the pod events, sees the writes it made) and patches it when it changed. observedGeneration moves
// only when the step succeeded. It returns when to look again for pods passing minReadySeconds.
func (r *Reconciler) writeStatus(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, in plan.Input, syncErr error) (time.Duration, error) {
	next := cs.Status.DeepCopy()
	requeue := plan.Counts(in, next)
	next.LabelSelector = w.selector.String()
	if syncErr == nil {
		next.ObservedGeneration = cs.Generation
	}
	setFailure(next, kruiseappsv1alpha1.CloneSetConditionFailedScale, nil, r.Clock.Now())
	setFailure(next, kruiseappsv1alpha1.CloneSetConditionFailedUpdate, syncErr, r.Clock.Now())
	if equality.Semantic.DeepEqual(&cs.Status, next) {
		return requeue, nil
	}
	cs.Status = *next
	return requeue, r.patchStatus(ctx, cs)
}

// patchStatus writes the whole status: a diff against the old one would leave out the counters that stay
// 0, which the schema requires to be present.
func (r *Reconciler) patchStatus(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet) error {
	raw, err := json.Marshal(map[string]any{"status": cs.Status})
	if err != nil {
		return fmt.Errorf("encode status: %w", err)
	}
	if err := r.Client.Status().Patch(ctx, cs, client.RawPatch(types.MergePatchType, raw)); err != nil {
		return fmt.Errorf("patch status: %w", client.IgnoreNotFound(err))
	}
	return nil
}

// failed records a failure that stopped the reconcile before any pod was touched.
func (r *Reconciler) failed(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, t kruiseappsv1alpha1.CloneSetConditionType, cause error) error {
	setFailure(&cs.Status, t, cause, r.Clock.Now())
	if err := r.patchStatus(ctx, cs); err != nil {
		return joinErr(cause, err)
	}
	return cause
}

// setFailure sets condition t True with the error's message, or removes it when err is nil.
func setFailure(s *kruiseappsv1alpha1.CloneSetStatus, t kruiseappsv1alpha1.CloneSetConditionType, err error, now time.Time) {
	var kept []kruiseappsv1alpha1.CloneSetCondition
	for _, c := range s.Conditions {
		if c.Type == t && err != nil && c.Message == err.Error() {
			return
		}
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	if err != nil {
		at := metav1.NewTime(now)
		kept = append(kept, kruiseappsv1alpha1.CloneSetCondition{Type: t, Status: corev1.ConditionTrue,
			LastUpdateTime: at, LastTransitionTime: at, Message: err.Error()})
	}
	s.Conditions = kept
}
