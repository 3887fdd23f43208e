package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/statuspatch"
	"github.com/flotilla-dev/flotilla/workloads/uniteddeployment/internal/plan"
)

// outcome is what applying a plan did: the errors to retry on, and whether a write met a stale read.
type outcome struct {
	errs  []error
	stale bool
}

func (o *outcome) err() error { return errors.Join(o.errs...) }

// apply writes the plan's workloads (a few per UnitedDeployment, so one after the other) and records an
// event for each change that took.
func (r *Reconciler) apply(ctx context.Context, ud *kruiseappsv1alpha1.UnitedDeployment, p plan.Plan) *outcome {
	out := &outcome{}
	failed := map[string]bool{}
	write := func(op string, objs []client.Object, do func(client.Object) error) {
		for _, obj := range objs {
			if err := out.add(op, obj, do(obj)); err != nil {
				failed[obj.GetLabels()[kruiseappsv1alpha1.SubSetNameLabelKey]] = true
			}
		}
	}
	write(opDelete, p.Delete, func(obj client.Object) error {
		uid := obj.GetUID()
		return r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid})
	})
	write(opCreate, p.Create, func(obj client.Object) error { return r.Client.Create(ctx, obj) })
	write(opUpdate, p.Update, func(obj client.Object) error { return r.Client.Update(ctx, obj) })
	for _, c := range p.Changes {
		if !failed[c.Subset] && !out.stale {
			r.Recorder.Eventf(ud, c.Object, corev1.EventTypeNormal, c.Reason, "Reconcile", "%s", c.Message)
		}
	}
	return out
}

// add records the result of one write and returns the error that failed it, if any. A create that finds
// the workload there, or an update that finds it changed or gone, acted on a stale read: the reconcile
// starts over. A workload already gone needs no delete.
func (o *outcome) add(op string, obj client.Object, err error) error {
	switch {
	case err == nil:
		countOperation(op, nil)
		return nil
	case op == opDelete && (apierrors.IsNotFound(err) || apierrors.IsConflict(err)):
		return nil
	case (op == opCreate && apierrors.IsAlreadyExists(err)) || (op == opUpdate && (apierrors.IsConflict(err) || apierrors.IsNotFound(err))):
		o.stale = true
		return err
	default:
		countOperation(op, err)
		o.errs = append(o.errs, fmt.Errorf("%s %s %s: %w", op, kindOf(obj), obj.GetName(), err))
		return err
	}
}

func kindOf(obj client.Object) string {
	return fmt.Sprintf("%T", obj)[1:]
}

// status is the UnitedDeployment's status after applying p.
func (r *Reconciler) status(ud *kruiseappsv1alpha1.UnitedDeployment, p plan.Plan, revs revisionState, a plan.Adaptive, failure error) kruiseappsv1alpha1.UnitedDeploymentStatus {
	selector := ""
	if sel, err := metav1.LabelSelectorAsSelector(ud.Spec.Selector); err == nil {
		selector = sel.String()
	}
	return plan.Status(plan.StatusInput{UD: ud, Plan: p, Revision: revs.update, CollisionCount: revs.collisionCount,
		Selector: selector, Failure: failure, Subsets: a.Conditions, Now: metav1.NewTime(r.Clock.Now())})
}

// invalid records a spec the planner cannot act on, as an event and a SubsetFailure condition, and makes
// err terminal: only a new spec can fix it, and its change enqueues the UnitedDeployment again.
func (r *Reconciler) invalid(ctx context.Context, ud *kruiseappsv1alpha1.UnitedDeployment, err error) error {
	r.Recorder.Eventf(ud, nil, corev1.EventTypeWarning, "InvalidSpec", "Reconcile", "%v", err)
	next := plan.Invalid(ud.Status, err, metav1.NewTime(r.Clock.Now()))
	return errors.Join(reconcile.TerminalError(err), r.writeStatus(ctx, ud, next))
}

// writeStatus patches the UnitedDeployment's status when it changed. The patch holds the resourceVersion
// read: a status computed from a stale copy conflicts instead of undoing a newer one.
func (r *Reconciler) writeStatus(ctx context.Context, ud *kruiseappsv1alpha1.UnitedDeployment, next kruiseappsv1alpha1.UnitedDeploymentStatus) error {
	if equality.Semantic.DeepEqual(&ud.Status, &next) {
		return nil
	}
	return statuspatch.WriteLocked(ctx, r.Client, ud, ud.Status, next)
}
