// Package controller is the UnitedDeployment controller: it runs one workload per subset of a
// UnitedDeployment (CloneSet, Advanced StatefulSet, StatefulSet or Deployment), with the replicas and
// partition the plan gives it, records the template's revisions and reports upstream's status. Planning is
// in ../plan; this package gathers, applies and records.
package controller

import (
	"context"
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
	"github.com/flotilla-dev/flotilla/workloads/uniteddeployment/internal/plan"
)

// ControllerName names the controller, its logs and the source of its events (upstream's).
const ControllerName = "uniteddeployment-controller"

// staleRetry is how soon a reconcile that acted on a stale read (a cache that does not yet show its own
// last writes, or a write race) looks again.
const staleRetry = 100 * time.Millisecond

// +kubebuilder:rbac:groups=apps.kruise.io,resources=uniteddeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=uniteddeployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=uniteddeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps.kruise.io,resources=clonesets;statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets;deployments;controllerrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles UnitedDeployments.
type Reconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events; conditions' transitions and
	// the adaptive strategy's timers read Clock. They default to the manager's and the real clock.
	reconcilerdeps.Deps
	// Workers is the number of concurrent reconciles; 0 means 3.
	Workers int
}

// SetupWithManager registers the controller: it watches UnitedDeployments (their specs) and the four kinds
// of subset workloads they control.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Default(mgr, ControllerName)
	workers := r.Workers
	if workers <= 0 {
		workers = 3
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&kruiseappsv1alpha1.UnitedDeployment{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&kruiseappsv1alpha1.CloneSet{}).
		Owns(&kruiseappsv1beta1.StatefulSet{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&appsv1.Deployment{}).
		Complete(r)
}

// Reconcile brings one UnitedDeployment's subset workloads to its spec: record the template's revision,
// plan from what the cache shows, write the workloads, report the status. Write failures are retried with
// backoff; an invalid spec waits for a new one.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ud := &kruiseappsv1alpha1.UnitedDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, ud); err != nil || ud.DeletionTimestamp != nil {
		// The subset workloads carry controller references: the garbage collector removes them with it.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	revs, err := r.syncRevisions(ctx, ud)
	if err != nil {
		return ctrl.Result{}, err
	}
	owned, err := r.owned(ctx, ud)
	if err != nil {
		return ctrl.Result{}, err
	}
	adaptive, err := r.adaptive(ctx, ud)
	if err != nil {
		return ctrl.Result{}, err
	}
	p, err := plan.Decide(plan.Input{UD: ud, Revision: revs.update, Owned: owned, Capacity: adaptive.Capacity})
	if err != nil {
		return ctrl.Result{}, r.invalid(ctx, ud, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Planned", "revision", revs.update, "replicas", p.Replicas, "create", len(p.Create),
		"update", len(p.Update), "delete", len(p.Delete))
	out := r.apply(ctx, ud, p)
	if out.stale {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	err = r.writeStatus(ctx, ud, r.status(ud, p, revs, adaptive, out.err()))
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	if err = errors.Join(err, out.err()); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: adaptive.Recheck}, nil
}
