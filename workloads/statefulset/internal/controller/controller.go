// Package controller is the Advanced StatefulSet controller: it keeps a set's pods at their ordinals and
// replica count with their claims, moves them to the current template (in place where the policy allows),
// drives the lifecycle hooks and reports upstream's status. Planning is in ../plan; this package gathers,
// applies and records.
package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
	"github.com/flotilla-dev/flotilla/workloads/expectations"
	"github.com/flotilla-dev/flotilla/workloads/orphans"
	"github.com/flotilla-dev/flotilla/workloads/paced"
	"github.com/flotilla-dev/flotilla/workloads/podclaim"
	"github.com/flotilla-dev/flotilla/workloads/predownload"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/plan"
)

// ControllerName names the controller, its logs and the source of its events (upstream's).
const ControllerName = "statefulset-controller"

// expectationsTTL bounds how long a reconcile waits for the cache to show the controller's own writes.
const expectationsTTL = 30 * time.Second

// conflictRetry is how soon a reconcile that lost a write race looks again.
const conflictRetry = 100 * time.Millisecond

// +kubebuilder:rbac:groups=apps.kruise.io,resources=statefulsets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=statefulsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=statefulsets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagepulljobs,verbs=get;list;watch;create;delete

// Reconciler reconciles Advanced StatefulSets.
type Reconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events. They default to the
	// manager's, Clock to the real clock.
	reconcilerdeps.Deps
	// APIReader reads pods past the cache after a lost write race; defaults to the manager's.
	APIReader client.Reader
	// Workers is the number of concurrent reconciles; 0 means 3.
	Workers int
	// Upstream's gates: StartOrdinal honours spec.ordinals (StatefulSetStartOrdinal), RetainClaims applies
	// persistentVolumeClaimRetentionPolicy (StatefulSetAutoDeletePVC), ResizeClaims lets claims follow their
	// templates (StatefulSetAutoResizePVCGate), IndexLabel labels pods with their ordinal (PodIndexLabel).
	StartOrdinal, RetainClaims, ResizeClaims, IndexLabel bool
	// PreDownloadImages creates ImagePullJobs ahead of in-place updates (gate PreDownloadImageForInPlaceUpdate).
	PreDownloadImages bool
	// AllowInPlaceUpdate, when set, is asked before a pod is updated in place: the modules' checks (a
	// PodUnavailableBudget's, with PodUnavailableBudgetUpdateGate).
	AllowInPlaceUpdate func(ctx context.Context, pod *corev1.Pod) (bool, error)

	// expectations hold the controller's pod writes, claimExpectations its claim creations, until the
	// cache shows them.
	expectations, claimExpectations *expectations.Expectations
	// createSlots and settleSlots bound the creates and the settling writes in flight across reconciles.
	createSlots, settleSlots chan struct{}
	// pods reads pods by controller (podclaim.ControllerIndex).
	pods *cacheindex.Pods
	// preDownloads pulls new images ahead of in-place updates; nil without PreDownloadImages.
	preDownloads *predownload.Syncer
}

// SetupWithManager registers the controller: it watches Advanced StatefulSets, the pods they own or may adopt
// and the claims they created.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.setDefaults(mgr)
	pods, err := podclaim.IndexPods(mgr)
	if err != nil {
		return err
	}
	r.pods = pods
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		For(&kruiseappsv1beta1.StatefulSet{}).
		Watches(&corev1.Pod{}, paced.OwnedPods(setKind.GroupKind())).
		Watches(&corev1.Pod{}, r.adopters(), builder.WithPredicates(orphans.Predicate)).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(claimOwner)).
		Complete(r)
}

func (r *Reconciler) setDefaults(mgr ctrl.Manager) {
	r.Default(mgr, ControllerName)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Workers <= 0 {
		r.Workers = 3
	}
	r.createSlots, r.settleSlots = make(chan struct{}, createWorkers), make(chan struct{}, createWorkers)
	r.expectations = expectations.New(r.Clock, expectationsTTL)
	r.claimExpectations = expectations.New(r.Clock, expectationsTTL)
	r.preDownloads = predownload.New(r.PreDownloadImages, r.Client, r.Recorder)
}

// Reconcile brings one set one step closer to its spec and reports its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	set := &kruiseappsv1beta1.StatefulSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, set); err != nil {
		r.expectations.Forget(req.NamespacedName)
		r.claimExpectations.Forget(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if set.DeletionTimestamp != nil {
		// Pods, revisions and the claims the retention policy deletes carry owner references: the garbage
		// collector removes them.
		return ctrl.Result{}, nil
	}
	sel, err := selectorOf(set)
	if err != nil {
		return ctrl.Result{}, r.failed(ctx, set, kruiseappsv1beta1.FailedCreatePod, reconcile.TerminalError(err))
	}
	w, err := r.gather(ctx, set, sel)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wait := max(expectations.Wait(r.expectations, req.NamespacedName, w.pods),
		expectations.Wait(r.claimExpectations, req.NamespacedName, w.claimList())); wait > 0 {
		return ctrl.Result{RequeueAfter: min(wait, time.Second)}, nil
	}
	revs, err := r.syncRevisions(ctx, set, w)
	if err != nil {
		return ctrl.Result{}, r.failed(ctx, set, kruiseappsv1beta1.FailedUpdatePod, err)
	}
	in := r.input(set, w, revs)
	syncErr := r.sync(ctx, set, w, revs, in)
	// A failed pre-download is reported as a failed update and retried, but the step itself observed the spec.
	preErr := r.preDownloads.Sync(ctx, r.preDownloadWorkload(set, revs.update), predownload.FromCurrent(revs.current, revs.update, revs.template))
	stepErr := errors.Join(syncErr, failedAs(kruiseappsv1beta1.FailedUpdatePod, preErr))
	err = errors.Join(stepErr, r.writeStatus(ctx, set, w, in, stepErr, syncErr == nil))
	if apierrors.IsConflict(err) {
		// A pod changed under a guarded write: look again with the new state.
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return ctrl.Result{RequeueAfter: w.wake}, err
}

// sync runs one step: it finishes what pods are doing (in-place updates, lifecycle moves), keeps the claims'
// owners to the retention policy, then plans and applies the step.
func (r *Reconciler) sync(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, revs *revisions, in plan.Input) error {
	if err := r.refresh(ctx, set, w, revs); err != nil {
		return failedAs(kruiseappsv1beta1.FailedUpdatePod, err)
	}
	if err := r.syncClaimOwners(ctx, set, w, in); err != nil {
		return failedAs(kruiseappsv1beta1.FailedUpdatePod, err)
	}
	in.Pods = w.pods
	step := plan.Plan(in)
	ctrl.LoggerFrom(ctx).V(1).Info("Planned step", "pods", len(in.Pods), "replicas", in.Strategy.Replicas,
		"create", len(step.Create), "delete", len(step.Delete), "update", podNames(step.Update), "waitingFor", step.WaitingFor)
	w.wakeIn(step.Wait)
	return r.apply(ctx, set, w, revs, in, step)
}

// apply carries out a step: deletions, creations and repairs, then claim expansions and updates.
func (r *Reconciler) apply(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, w *world, revs *revisions, in plan.Input, step plan.Step) error {
	if limit := in.Strategy.ScaleMaxUnavailable; step.ScaleLimited && limit != nil {
		r.Recorder.Eventf(set, nil, corev1.EventTypeWarning, "ScaleUpLimited", "Scale",
			"scaleUp is limited because of scaleStrategy.maxUnavailable, limit: %d", *limit)
	}
	if err := r.deletePods(ctx, set, step.Delete); err != nil {
		return err
	}
	if err := r.createPods(ctx, set, w, revs, step.Create); err != nil {
		return failedAs(kruiseappsv1beta1.FailedCreatePod, err)
	}
	err := errors.Join(r.repairPods(ctx, set, step.Repair), r.resizeClaims(ctx, set, w, step.Resize), r.updatePods(ctx, set, w, revs, step.Update))
	return failedAs(kruiseappsv1beta1.FailedUpdatePod, err)
}

// input is what the planner sees of the set.
func (r *Reconciler) input(set *kruiseappsv1beta1.StatefulSet, w *world, revs *revisions) plan.Input {
	in := plan.Input{
		Now: r.Clock.Now(), Name: set.Name, Strategy: plan.Resolve(&set.Spec, r.StartOrdinal),
		UpdateRevision: revs.update.Name, CurrentRevision: revs.current.Name, Pods: w.pods, IndexLabel: r.IndexLabel,
	}
	if r.ResizeClaims && set.Spec.VolumeClaimUpdateStrategy.Type == kruiseappsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType {
		in.Claims = claimStates(set, w)
	}
	return in
}

func podNames(pods []*corev1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names
}
