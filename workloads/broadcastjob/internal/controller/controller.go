// Package controller is the BroadcastJob controller: it runs one pod to completion on every node the job's
// template fits, within parallelism, and moves the job through upstream's phases (running, paused,
// completed, failed) until its TTL deletes it. Planning is in ../plan; this package gathers, applies and
// records.
package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/broadcastjob/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
	"github.com/flotilla-dev/flotilla/workloads/expectations"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// ControllerName names the controller, its logs and the source of its events (upstream's).
const ControllerName = "broadcastjob-controller"

// expectationsTTL bounds how long a reconcile waits for the cache to show the controller's own writes.
const expectationsTTL = 30 * time.Second

// conflictRetry is how soon a reconcile that lost a write race looks again.
const conflictRetry = 100 * time.Millisecond

// +kubebuilder:rbac:groups=apps.kruise.io,resources=broadcastjobs,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=apps.kruise.io,resources=broadcastjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=broadcastjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles BroadcastJobs.
type Reconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events; deadlines and TTLs are
	// measured on Clock. They default to the manager's and the real clock.
	reconcilerdeps.Deps
	// Workers is the number of concurrent reconciles; 0 means 3 (upstream's --broadcastjob-workers).
	Workers int

	expectations *expectations.Expectations
	pods         *cacheindex.Pods
}

// SetupWithManager registers the controller: it watches BroadcastJobs, the pods they control and the nodes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.setDefaults(mgr)
	pods, err := cacheindex.IndexPods(mgr, podControllerIndex, podController)
	if err != nil {
		return err
	}
	r.pods = pods
	workers := r.Workers
	if workers <= 0 {
		workers = 3
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&kruiseappsv1alpha1.BroadcastJob{}).
		Owns(&corev1.Pod{}).
		Watches(&corev1.Node{}, r.nodeHandler(), builder.WithPredicates(nodeChanged)).
		Complete(r)
}

func (r *Reconciler) setDefaults(mgr ctrl.Manager) {
	r.Default(mgr, ControllerName)
	r.expectations = expectations.New(r.Clock, expectationsTTL)
}

// Reconcile runs one step of a BroadcastJob: the pods it creates and deletes, its status, and its deletion once
// its TTL after finishing has passed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &kruiseappsv1alpha1.BroadcastJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, job); err != nil {
		r.expectations.Forget(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	in, err := r.gather(ctx, job)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wait := expectations.Wait(r.expectations, req.NamespacedName, in.Pods); wait > 0 {
		// The cache lags the last writes: act once it shows them.
		return ctrl.Result{RequeueAfter: min(wait, time.Second)}, nil
	}
	d := plan.Decide(in)
	ctrl.LoggerFrom(ctx).V(1).Info("Decided", "create", len(d.Create), "delete", len(d.Delete), "phase", d.Status.Phase, "deleteJob", d.DeleteJob)
	if d.DeleteJob {
		return ctrl.Result{}, r.deleteJob(ctx, job)
	}
	// The status goes first: a decision made on a stale copy of the job conflicts there, before it acts.
	if err := r.writeStatus(ctx, job, d); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, err
	}
	err = r.apply(ctx, job, d)
	r.record(job, d)
	return ctrl.Result{RequeueAfter: d.Wake}, err
}
