// Package controller is the Advanced DaemonSet controller: it keeps one pod on every node that should run
// one, moves the pods to the current template as the update strategy allows (recreating them, or in place),
// honours the preDelete hook and reports upstream's status. Planning is in ../plan; this package gathers,
// applies and records.
package controller

import (
	"context"
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
	"github.com/flotilla-dev/flotilla/workloads/daemonset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/expectations"
	"github.com/flotilla-dev/flotilla/workloads/nodeplacement"
	"github.com/flotilla-dev/flotilla/workloads/orphans"
	"github.com/flotilla-dev/flotilla/workloads/paced"
	"github.com/flotilla-dev/flotilla/workloads/podclaim"
	"github.com/flotilla-dev/flotilla/workloads/predownload"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// ControllerName names the controller, its logs and the source of its events (upstream's).
const ControllerName = "daemonset-controller"

// expectationsTTL bounds how long a reconcile waits for the cache to show the controller's own writes.
const expectationsTTL = 30 * time.Second

// conflictRetry is how soon a reconcile that lost a write race looks again.
const conflictRetry = 100 * time.Millisecond

// +kubebuilder:rbac:groups=apps.kruise.io,resources=daemonsets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=daemonsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=daemonsets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagepulljobs,verbs=get;list;watch;create;delete

// Reconciler reconciles Advanced DaemonSets.
type Reconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events. They default to the
	// manager's, Clock to the real clock.
	reconcilerdeps.Deps
	// Workers is the number of concurrent reconciles; 0 means 3 (upstream's --daemonset-workers).
	Workers int
	// PreDownloadImages creates ImagePullJobs ahead of updates (gate PreDownloadImageForDaemonSetUpdate).
	PreDownloadImages bool

	expectations *expectations.Expectations
	// failedPods spaces the deletions of a node's failed pods, which a kubelet may reject again and again.
	failedPods *flowcontrol.Backoff
	pods       *cacheindex.Pods
	// preDownloads pulls new images ahead of updates; nil without PreDownloadImages.
	preDownloads *predownload.Syncer
}

// SetupWithManager registers the controller: it watches Advanced DaemonSets, the pods they own or may adopt
// and the nodes.
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
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&kruiseappsv1alpha1.DaemonSet{}).
		Watches(&corev1.Pod{}, paced.OwnedPods(plan.Kind.GroupKind())).
		Watches(&corev1.Pod{}, r.adopters(), builder.WithPredicates(orphans.Predicate)).
		Owns(&appsv1.ControllerRevision{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.allDaemonSets), builder.WithPredicates(nodeplacement.NodeChanged)).
		Complete(r)
}

func (r *Reconciler) setDefaults(mgr ctrl.Manager) {
	r.Default(mgr, ControllerName)
	r.expectations = expectations.New(r.Clock, expectationsTTL)
	r.failedPods = flowcontrol.NewBackOff(time.Second, 15*time.Minute)
	r.preDownloads = predownload.New(r.PreDownloadImages, r.Client, r.Recorder)
}

// Reconcile brings one DaemonSet one step closer to its spec and reports its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ds := &kruiseappsv1alpha1.DaemonSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, ds); err != nil {
		r.expectations.Forget(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ds.DeletionTimestamp != nil {
		// Pods and revisions carry owner references: the garbage collector removes them.
		return ctrl.Result{}, nil
	}
	w, err := r.gather(ctx, ds)
	if err != nil {
		return ctrl.Result{}, r.failed(ctx, ds, err)
	}
	if wait := expectations.Wait(r.expectations, req.NamespacedName, w.pods); wait > 0 {
		// The cache lags the last writes: report what it shows, act once it shows them.
		_, err := r.writeStatus(ctx, ds, w, nil, false)
		return ctrl.Result{RequeueAfter: min(wait, time.Second)}, err
	}
	syncErr := r.sync(ctx, ds, w)
	// A failed pre-download is reported like a failed step, but the step itself observed the spec.
	stepErr := errors.Join(syncErr, failedAs(reasonFailedUpdate, r.preDownload(ctx, ds, w)))
	wake, err := r.writeStatus(ctx, ds, w, stepErr, syncErr == nil)
	if err = errors.Join(stepErr, err); apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return ctrl.Result{RequeueAfter: earliest(w.wake, wake)}, err
}

// sync runs one step: finish in-place updates, then create and delete pods until every node runs one; only
// when that has nothing to do does it take the rolling update a step further, so that one reconcile never
// both places and replaces pods.
func (r *Reconciler) sync(ctx context.Context, ds *kruiseappsv1alpha1.DaemonSet, w *world) error {
	if err := r.refresh(ctx, ds, w); err != nil {
		return failedAs(reasonFailedUpdate, err)
	}
	m := plan.PlanManage(w.in)
	w.wakeIn(m.Wake)
	ctrl.LoggerFrom(ctx).V(1).Info("Planned nodes", "create", m.Create, "delete", podNames(m.Delete), "desired", w.in.Desired())
	if !m.Empty() {
		return r.manage(ctx, ds, w, m)
	}
	if err := r.truncateHistory(ctx, ds, w); err != nil {
		return failedAs(reasonFailedUpdate, err)
	}
	u := plan.PlanUpdate(w.in)
	w.wakeIn(u.Wake)
	ctrl.LoggerFrom(ctx).V(1).Info("Planned update", "replace", podNames(u.Replace), "create", u.Create, "delete", podNames(u.Delete))
	return r.update(ctx, ds, w, u)
}

func podNames(pods []*corev1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names
}

// earliest is the sooner of two waits, 0 meaning none.
func earliest(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
