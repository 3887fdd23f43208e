// Package controller is the PodUnavailableBudget controller: it finds the pods a budget protects (its
// selector's, or its target workload's), marks them with the related-pub annotation the pod validating
// webhook reads, counts the available ones against maxUnavailable or minAvailable of the replicas, expires the
// disruptions the webhook recorded, and reports upstream's status. Planning is in ../plan; this package
// gathers, writes and records.
package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
	"github.com/flotilla-dev/flotilla/workloads/podclaim"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
	"github.com/flotilla-dev/flotilla/workloads/workloadref"
)

// ControllerName names the controller, its logs and the source of its events (upstream's).
const ControllerName = "podunavailablebudget-controller"

// conflictRetry is how soon a reconcile whose status write lost a race looks again.
const conflictRetry = 100 * time.Millisecond

// +kubebuilder:rbac:groups=policy.kruise.io,resources=podunavailablebudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.kruise.io,resources=podunavailablebudgets/status,verbs=get;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;replicasets;statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=clonesets;statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=*,resources=*/scale,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles PodUnavailableBudgets.
type Reconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events; recorded disruptions expire
	// by Clock. They default to the manager's and the real clock.
	reconcilerdeps.Deps
	// APIReader reads a budget past the cache after a write lost a race; it defaults to the manager's.
	APIReader client.Reader
	// Workers is the number of concurrent reconciles; 0 means 3 (upstream's --podunavailablebudget-workers).
	Workers int
	// KruiseWorkloads watches CloneSets and Advanced StatefulSets for their replicas (when they are served).
	KruiseWorkloads bool

	finder *workloadref.Finder
	pods   *cacheindex.Pods
}

// SetupWithManager registers the controller: it watches budgets, pods, and the replicas of the workloads
// budgets count.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.setDefaults(mgr)
	pods, err := podclaim.IndexPods(mgr)
	if err != nil {
		return err
	}
	r.pods = pods
	workers := r.Workers
	if workers <= 0 {
		workers = 3
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&kruisepolicyv1alpha1.PodUnavailableBudget{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&corev1.Pod{}, r.podHandler())
	// The workloads whose replicas budgets count, as upstream's.
	for _, w := range workloadref.Watch(r.KruiseWorkloads, workloadref.DeploymentKind, workloadref.StatefulSetKind) {
		b = b.Watches(w.Object, r.workloadHandler(w.Kind), builder.WithPredicates(workloadref.ReplicasChanged(w.Replicas)))
	}
	return b.Complete(r)
}

func (r *Reconciler) setDefaults(mgr ctrl.Manager) {
	r.Default(mgr, ControllerName)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.finder = &workloadref.Finder{Client: r.Client}
}

// Reconcile counts one budget's pods and reports its status, waking when its next recorded disruption
// expires.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pub := &kruisepolicyv1alpha1.PodUnavailableBudget{}
	if err := r.Client.Get(ctx, req.NamespacedName, pub); err != nil || pub.DeletionTimestamp != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	pods, total, err := r.gather(ctx, pub)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.markPods(ctx, pub, pods); err != nil {
		return ctrl.Result{}, err
	}
	res, lost, err := r.writeStatus(ctx, pub, pods, total)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case lost:
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	r.reportNotDeleted(pub, pods, res.NotDeleted)
	return ctrl.Result{RequeueAfter: res.Recheck}, nil
}

// terminal marks an error a retry cannot fix: the budget's spec must change.
func terminal(err error) error { return reconcile.TerminalError(err) }
