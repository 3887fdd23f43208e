// Package controller is the AdvancedCronJob controller: on its schedule it creates a Job, a BroadcastJob or an
// ImageListPullJob from the template, at most one per run and only the most recent of the runs it missed, as
// the concurrency policy and the starting deadline let it; it removes the finished children beyond the history
// limits and reports the active ones and the last run. Planning is in ../plan; this package gathers, applies
// and records.
package controller

import (
	"context"
	"errors"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/flotilla-dev/flotilla/workloads/advancedcronjob/internal/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/expectations"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// ControllerName names the controller, its logs and the source of its events (upstream's).
const ControllerName = "advancedcronjob-controller"

// expectationsTTL bounds how long a reconcile waits for the cache to show the controller's own writes.
const expectationsTTL = 30 * time.Second

// conflictRetry is how soon a reconcile that lost a write race looks again.
const conflictRetry = 100 * time.Millisecond

// +kubebuilder:rbac:groups=apps.kruise.io,resources=advancedcronjobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=advancedcronjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=advancedcronjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=apps.kruise.io,resources=broadcastjobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagelistpulljobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles AdvancedCronJobs.
type Reconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events. They default to the
	// manager's, Clock to the real clock; tests step a fake one instead of waiting for the schedule.
	reconcilerdeps.Deps
	// Local is the zone of schedules without timeZone; it defaults to the manager's.
	Local *time.Location
	// Workers is the number of concurrent reconciles; 0 means 3 (upstream's --advancedcronjob-workers).
	Workers int

	expectations *expectations.Expectations
}

// SetupWithManager registers the controller: it watches AdvancedCronJobs and the Jobs, BroadcastJobs and
// ImageListPullJobs they control.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.setDefaults(mgr)
	if err := indexChildren(mgr); err != nil {
		return err
	}
	workers := r.Workers
	if workers <= 0 {
		workers = 3
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&kruiseappsv1alpha1.AdvancedCronJob{}).
		Owns(&batchv1.Job{}).
		Owns(&kruiseappsv1alpha1.BroadcastJob{}).
		Owns(&kruiseappsv1alpha1.ImageListPullJob{}).
		Complete(r)
}

func (r *Reconciler) setDefaults(mgr ctrl.Manager) {
	r.Default(mgr, ControllerName)
	if r.Local == nil {
		r.Local = time.Local
	}
	r.expectations = expectations.New(r.Clock, expectationsTTL)
}

// Reconcile runs one step of an AdvancedCronJob: prune its history, start the run that is due, report.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	acj := &kruiseappsv1alpha1.AdvancedCronJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, acj); err != nil {
		r.expectations.Forget(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if acj.DeletionTimestamp != nil {
		// Children carry controller references: the garbage collector removes them.
		return ctrl.Result{}, nil
	}
	kids, err := r.children(ctx, acj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wait := expectations.Wait(r.expectations, req.NamespacedName, kids.objects()); wait > 0 {
		// The cache lags the last writes: act once it shows them.
		return ctrl.Result{RequeueAfter: min(wait, time.Second)}, nil
	}
	p := plan.Decide(r.input(acj, kids))
	ctrl.LoggerFrom(ctx).V(1).Info("Planned", "run", p.Run, "due", p.Due, "skip", p.Skip, "prune", len(p.Prune),
		"replace", len(p.Replace), "active", len(p.Active), "wake", p.Wake)
	r.recordPlan(acj, kids, p)
	out, applyErr := r.apply(ctx, acj, kids, p)
	statusErr := r.writeStatus(ctx, acj, kids, p, out)
	if err = errors.Join(applyErr, statusErr); apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return ctrl.Result{RequeueAfter: p.Wake}, err
}

// input is the planner's view of the AdvancedCronJob at the clock's now.
func (r *Reconciler) input(acj *kruiseappsv1alpha1.AdvancedCronJob, kids children) plan.Input {
	in := plan.Input{Name: acj.Name, Now: r.Clock.Now(), Local: r.Local, Created: acj.CreationTimestamp.Time,
		Spec: &acj.Spec, Children: kids.planned()}
	if acj.Status.LastScheduleTime != nil {
		in.LastScheduleTime = &acj.Status.LastScheduleTime.Time
	}
	return in
}
