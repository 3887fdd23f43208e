// Package controller is the EphemeralJob controller: it adds a job's ephemeral containers to the pods its
// selector picks, a few at a time, reports upstream's status from the pods' ephemeral container statuses, ends
// the job at its deadline and deletes it once its time to live after finishing has passed. Planning is in
// ../plan; this package gathers, applies and records.
package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/ephemeraljob/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/expectations"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// ControllerName names the controller, its logs and the source of its events (upstream's).
const ControllerName = "ephemeraljob-controller"

// expectationsTTL bounds how long a reconcile waits for the cache to show the controller's own injections.
const expectationsTTL = 30 * time.Second

// conflictRetry is how soon a reconcile that lost a write race looks again.
const conflictRetry = 100 * time.Millisecond

// +kubebuilder:rbac:groups=apps.kruise.io,resources=ephemeraljobs,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=apps.kruise.io,resources=ephemeraljobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=ephemeraljobs/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/ephemeralcontainers,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles EphemeralJobs.
type Reconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events; Clock dates the status and
	// decides deadlines and expiry. They default to the manager's and the real clock.
	reconcilerdeps.Deps
	// Workers is the number of concurrent reconciles; 0 means 10 (upstream's).
	Workers int

	expectations *expectations.Expectations
	conflicts    *reported
}

// SetupWithManager registers the controller: it watches EphemeralJobs and the pods their selectors match.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.setDefaults(mgr)
	workers := r.Workers
	if workers <= 0 {
		workers = 10
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&kruiseappsv1alpha1.EphemeralJob{}).
		Watches(&corev1.Pod{}, &podHandler{reader: mgr.GetClient()}, builder.WithPredicates(podChanged)).
		Complete(r)
}

func (r *Reconciler) setDefaults(mgr ctrl.Manager) {
	r.Default(mgr, ControllerName)
	r.expectations = expectations.New(r.Clock, expectationsTTL)
	r.conflicts = newReported()
}

// Reconcile brings one EphemeralJob one step further and reports its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &kruiseappsv1alpha1.EphemeralJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, job); err != nil {
		r.forget(req.NamespacedName, "")
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if job.DeletionTimestamp != nil {
		return ctrl.Result{}, r.release(ctx, job)
	}
	if err := r.ensureFinalizer(ctx, job); err != nil {
		return retryConflict(err)
	}
	if job.Status.CompletionTime != nil {
		return r.expire(ctx, job)
	}
	pods, err := r.selected(ctx, job)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wait := expectations.Wait(r.expectations, req.NamespacedName, pods); wait > 0 {
		// The cache lags the last injections: act once it shows them.
		return ctrl.Result{RequeueAfter: min(wait, time.Second)}, nil
	}
	p := plan.Make(plan.Input{Job: job, Pods: pods, Now: r.Clock.Now()})
	ctrl.LoggerFrom(ctx).V(1).Info("Planned", "inject", podNames(p.Inject), "phase", p.Status.Phase, "match", p.Status.Matches)
	r.reportConflicts(job, p.Conflicts)
	injectErr := r.inject(ctx, job, p.Inject)
	res, err := retryConflict(errors.Join(injectErr, r.writeStatus(ctx, job, p.Status)))
	if res.IsZero() && err == nil {
		res.RequeueAfter = p.Wake
	}
	return res, err
}

// retryConflict turns a lost write race into a quick retry instead of an error.
func retryConflict(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return ctrl.Result{}, err
}

// forget drops what the controller remembers of a job that is gone (uid empty when unknown).
func (r *Reconciler) forget(key types.NamespacedName, uid types.UID) {
	r.expectations.Forget(key)
	if uid != "" {
		r.conflicts.forget(uid)
	}
}

func podNames(pods []*corev1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names
}
