// Package controller is the ResourceDistribution controller: it keeps a copy of a Secret or ConfigMap in every
// namespace a ResourceDistribution targets, restores copies others edit or delete, removes its copies from
// namespaces no longer targeted, and reports upstream's counts and six conditions. Planning is in ../plan;
// this package gathers, applies and records.
package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
	"github.com/flotilla-dev/flotilla/workloads/resourcedistribution/internal/plan"
)

// ControllerName names the controller, its logs and the source of its events (upstream's).
const ControllerName = "resourcedistribution-controller"

// staleRetry is how soon a reconcile that acted on a stale read (a write race, or a cache that does not yet
// show its own last writes) looks again.
const staleRetry = 100 * time.Millisecond

// +kubebuilder:rbac:groups=apps.kruise.io,resources=resourcedistributions,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=resourcedistributions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=resourcedistributions/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles ResourceDistributions.
type Reconciler struct {
	// Client reads ResourceDistributions and namespaces from the manager's cache and writes; Recorder records
	// events; the copies' timestamps and the conditions' transitions read Clock. They default to the
	// manager's and the real clock.
	reconcilerdeps.Deps
	// Workers is the number of concurrent reconciles; 0 means 3 (upstream's --resourcedistribution-workers).
	Workers int

	// copies caches every Secret and ConfigMap of the cluster, the content of the distributions' copies only
	// (copies.go): the manager's cache holds the ConfigMaps of one namespace.
	copies cache.Cache
}

// SetupWithManager registers the controller: it watches ResourceDistributions (their specs), namespaces
// (those that join or leave a distribution's targets) and the copies (an edit or deletion of one).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Default(mgr, ControllerName)
	copies, err := newCopyCache(mgr)
	if err != nil {
		return err
	}
	r.copies = copies
	workers := r.Workers
	if workers <= 0 {
		workers = 3
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&kruiseappsv1alpha1.ResourceDistribution{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Namespace{}, r.namespaceHandler()).
		WatchesRawSource(copySource[*corev1.Secret](mgr, copies, &corev1.Secret{})).
		WatchesRawSource(copySource[*corev1.ConfigMap](mgr, copies, &corev1.ConfigMap{})).
		Complete(r)
}

// Reconcile distributes one ResourceDistribution's resource: plan from what the caches show, write the copies,
// report the outcome. Write failures are retried with backoff; conflicts and missing namespaces wait for the
// change that resolves them.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rd := &kruiseappsv1alpha1.ResourceDistribution{}
	if err := r.Client.Get(ctx, req.NamespacedName, rd); err != nil || rd.DeletionTimestamp != nil {
		// The copies carry controller references: the garbage collector removes them with it.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	in, err := r.gather(ctx, rd)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := plan.Decide(in)
	ctrl.LoggerFrom(ctx).V(1).Info("Planned", "targets", len(in.Targets), "create", len(p.Create), "update", len(p.Update),
		"delete", len(p.Delete), "failures", len(p.Failures))
	out := r.apply(ctx, rd, in.Resource, p)
	if out.stale {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	status := plan.Status(rd, in.Targets, append(p.Failures, out.failures...), r.Clock.Now())
	err = r.writeStatus(ctx, rd, status)
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	return ctrl.Result{}, errors.Join(err, out.err())
}
