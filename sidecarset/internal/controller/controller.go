// Package controller is the SidecarSet controller: it keeps the SidecarSet's revision history and status,
// and updates the images of the sidecars it injected into running pods, in place, within the update
// strategy. Injection itself happens in the pod webhook (../../inject); planning is in ../plan.
package controller

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/sidecarset/inject"
	"github.com/flotilla-dev/flotilla/sidecarset/internal/plan"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
	"github.com/flotilla-dev/flotilla/workloads/expectations"
	"github.com/flotilla-dev/flotilla/workloads/paced"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// ControllerName names the controller, its logs and the source of its events (upstream's).
const ControllerName = "sidecarset-controller"

// expectationsTTL bounds how long a reconcile waits for the cache to show the controller's own writes.
const expectationsTTL = 30 * time.Second

// conflictRetry is how soon a reconcile that lost a write race looks again.
const conflictRetry = 100 * time.Millisecond

// podEventInterval paces the reconciles pod events ask for: a SidecarSet that selects the pods of a burst of
// creations (a Deployment scaled out, a namespace's pods recreated) reads its pods and writes its status
// once a second, not once per pod, and the pod webhook on the same manager keeps its CPU.
const podEventInterval = time.Second

// podIndex indexes the cached pods by the SidecarSets that injected them.
const podIndex = "sidecarset.injected"

// +kubebuilder:rbac:groups=apps.kruise.io,resources=sidecarsets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=sidecarsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles SidecarSets.
type Reconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events. They default to the
	// manager's, Clock to the real clock.
	reconcilerdeps.Deps
	// Namespace holds the SidecarSets' ControllerRevisions (upstream keeps them in its own namespace).
	Namespace string
	// Workers is the number of concurrent reconciles; 0 means 3 (upstream's --sidecarset-workers).
	Workers int

	expectations *expectations.Expectations
	pods         *cacheindex.Pods
}

// SetupWithManager registers the controller: it watches SidecarSets' specs (not the status it writes
// itself) and, paced, the pods they injected.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Namespace == "" {
		return errors.New("the SidecarSet controller needs the namespace of its revisions")
	}
	r.setDefaults(mgr)
	pods, err := cacheindex.IndexPodsAcrossNamespaces(mgr, podIndex, injectedNames)
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
		For(&kruiseappsv1alpha1.SidecarSet{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Pod{}, paced.New(podEventInterval, nil).Handler(injectedBy)).
		Watches(&appsv1.ControllerRevision{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			&kruiseappsv1alpha1.SidecarSet{}, handler.OnlyControllerOwner())).
		Complete(r)
}

func (r *Reconciler) setDefaults(mgr ctrl.Manager) {
	r.Default(mgr, ControllerName)
	r.expectations = expectations.New(r.Clock, expectationsTTL)
}

// injectedBy maps a pod to the SidecarSets its hash annotation names: the ones whose status it counts in.
func injectedBy(_ context.Context, obj client.Object) []reconcile.Request {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, name := range injectedNames(pod) {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	}
	return out
}

// injectedNames are the SidecarSets a pod's hash annotation names.
func injectedNames(pod *corev1.Pod) []string {
	return slices.Collect(maps.Keys(inject.PodHashes(pod, kruiseappsv1alpha1.SidecarSetHashAnnotation)))
}

// Reconcile brings one SidecarSet's revisions, pods and status up to date.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	set := &kruiseappsv1alpha1.SidecarSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, set); err != nil {
		r.expectations.Forget(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	pods, err := r.gather(ctx, set)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wait := expectations.Wait(r.expectations, req.NamespacedName, pods); wait > 0 {
		return ctrl.Result{RequeueAfter: min(wait, time.Second)}, nil // the cache lags the last pod writes
	}
	latest, err := r.syncRevisions(ctx, set, pods)
	if err != nil {
		return r.retryOnConflict(err)
	}
	p := plan.Compute(plan.Input{Set: set, Pods: pods, Now: metav1.NewTime(r.Clock.Now())})
	err = errors.Join(r.changePods(ctx, set, latest, p.Update, update), r.changePods(ctx, set, latest, p.Reset, reset),
		r.writeConditions(ctx, set, p.Conditions))
	r.record(set, p)
	if err := r.writeStatus(ctx, set, p.Counts, latest); err != nil {
		return r.retryOnConflict(err)
	}
	return ctrl.Result{}, err
}

func (r *Reconciler) retryOnConflict(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || errors.Is(err, errConflict) {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return ctrl.Result{}, err
}
