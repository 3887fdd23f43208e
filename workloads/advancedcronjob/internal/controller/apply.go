package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/workloads/advancedcronjob/internal/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Reasons of the events about children (kube's CronJob controller's).
const (
	reasonSuccessfulCreate   = "SuccessfulCreate"
	reasonFailedCreate       = "FailedCreate"
	reasonSuccessfulDelete   = "SuccessfulDelete"
	reasonFailedDelete       = "FailedDelete"
	reasonSawCompletedJob    = "SawCompletedJob"
	reasonTooManyMissedTimes = "TooManyMissedTimes"
)

// outcome is what a step changed: the child it created and the running children it deleted.
type outcome struct {
	created  client.Object
	kind     string
	replaced map[types.UID]bool
}

// apply prunes the history (best effort: a failure does not hold the run back), replaces the running
// children if the policy says so, and creates the run's child.
func (r *Reconciler) apply(ctx context.Context, acj *kruiseappsv1alpha1.AdvancedCronJob, kids children, p plan.Plan) (outcome, error) {
	out := outcome{replaced: map[types.UID]bool{}}
	byUID := kids.byUID()
	var errs []error
	for _, c := range p.Prune {
		errs = append(errs, r.deleteChild(ctx, acj, byUID[string(c.UID)]))
	}
	if p.Run == nil {
		return out, errors.Join(errs...)
	}
	for _, c := range p.Replace {
		if err := r.deleteChild(ctx, acj, byUID[string(c.UID)]); err != nil {
			return out, errors.Join(append(errs, err)...) // the run waits until the old one is gone
		}
		out.replaced[c.UID] = true
	}
	out.created, out.kind = r.newChild(acj, *p.Run)
	if err := r.create(ctx, acj, out.created, *p.Run); err != nil {
		out.created = nil
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// newChild is the run's Job, BroadcastJob or ImageListPullJob and its kind.
func (r *Reconciler) newChild(acj *kruiseappsv1alpha1.AdvancedCronJob, t time.Time) (client.Object, string) {
	kind := plan.TemplateKind(&acj.Spec)
	switch kind {
	case kruiseappsv1alpha1.JobTemplate:
		return plan.NewJob(acj, t), string(kind)
	case kruiseappsv1alpha1.ImageListPullJobTemplate:
		return plan.NewImageListPullJob(acj, t), string(kind)
	default:
		return plan.NewBroadcastJob(acj, t), string(kind)
	}
}

// create creates the run's child. A name already taken is not retried: the run's name is fixed, and the
// next run has another.
func (r *Reconciler) create(ctx context.Context, acj *kruiseappsv1alpha1.AdvancedCronJob, obj client.Object, t time.Time) error {
	key := client.ObjectKeyFromObject(acj)
	r.expectations.Created(key, obj.GetName())
	err := r.Client.Create(ctx, obj)
	countOperation(opCreate, err)
	if err != nil {
		r.expectations.Forget(key)
		r.Recorder.Eventf(acj, nil, corev1.EventTypeWarning, reasonFailedCreate, "Create", "Error creating job: %v", err)
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("create %s: %w", obj.GetName(), err)
	}
	creationSkew.Observe(r.Clock.Since(t).Seconds())
	r.Recorder.Eventf(acj, obj, corev1.EventTypeNormal, reasonSuccessfulCreate, "Create", "Created job %s", obj.GetName())
	return nil
}

// deleteChild deletes a child and its pods (in the background, as upstream).
func (r *Reconciler) deleteChild(ctx context.Context, acj *kruiseappsv1alpha1.AdvancedCronJob, c child) error {
	if c.obj == nil {
		return nil
	}
	r.expectations.Deleted(client.ObjectKeyFromObject(acj), c.obj.GetUID())
	err := client.IgnoreNotFound(r.Client.Delete(ctx, c.obj, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: ptrUID(c.obj.GetUID())}))
	countOperation(opDelete, err)
	if err != nil {
		r.expectations.Forget(client.ObjectKeyFromObject(acj))
		r.Recorder.Eventf(acj, nil, corev1.EventTypeWarning, reasonFailedDelete, "Delete", "Deleted job: %v", err)
		return fmt.Errorf("delete %s: %w", c.obj.GetName(), err)
	}
	r.Recorder.Eventf(acj, nil, corev1.EventTypeNormal, reasonSuccessfulDelete, "Delete", "Deleted job %s", c.obj.GetName())
	return nil
}

func ptrUID(u types.UID) *types.UID { return &u }

// recordPlan records the events of what the plan found: a schedule that cannot run, a run skipped or late,
// and the children that finished since the status listed them as active.
func (r *Reconciler) recordPlan(acj *kruiseappsv1alpha1.AdvancedCronJob, kids children, p plan.Plan) {
	if p.Err != nil {
		r.Recorder.Eventf(acj, nil, corev1.EventTypeWarning, p.Err.Reason, "Schedule", "%s", p.Err.Message)
	}
	switch p.Skip {
	case plan.SkipTooLate:
		r.Recorder.Eventf(acj, nil, corev1.EventTypeWarning, string(p.Skip), "Schedule",
			"Missed scheduled time to start a job: %s", p.Due.UTC().Format(time.RFC1123Z))
	case plan.SkipForbidden:
		r.Recorder.Eventf(acj, nil, corev1.EventTypeNormal, string(p.Skip), "Schedule",
			"Not starting job because prior execution is running and concurrency policy is Forbid")
	}
	if p.TooManyMissed {
		r.Recorder.Eventf(acj, nil, corev1.EventTypeWarning, reasonTooManyMissedTimes, "Schedule",
			"too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
	}
	byUID := kids.byUID()
	for _, ref := range acj.Status.Active {
		if c, ok := byUID[string(ref.UID)]; ok && c.planned.State != plan.Running {
			r.Recorder.Eventf(acj, c.obj, corev1.EventTypeNormal, reasonSawCompletedJob, "Watch",
				"Saw completed job: %s, condition: %s", c.obj.GetName(), c.planned.State)
		}
	}
}
