// Package controller is the CloneSet controller: it keeps a CloneSet's pods (and their claims) at the
// replica count, moves them to the current template (in place where possible), drives the lifecycle hooks
// and reports upstream's status. Planning is in ../plan; this package gathers, applies and records.
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
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cacheindex"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/plan"
	"github.com/flotilla-dev/flotilla/workloads/expectations"
	"github.com/flotilla-dev/flotilla/workloads/orphans"
	"github.com/flotilla-dev/flotilla/workloads/paced"
	"github.com/flotilla-dev/flotilla/workloads/podclaim"
	"github.com/flotilla-dev/flotilla/workloads/predownload"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// ControllerName names the controller, its logs and the source of its events (upstream's).
const ControllerName = "cloneset-controller"

// expectationsTTL bounds how long a reconcile waits for the cache to show the controller's own writes. A
// pod deleted by someone else before the cache listed it is never seen as created: the wait must stay short.
const expectationsTTL = 30 * time.Second

// +kubebuilder:rbac:groups=apps.kruise.io,resources=clonesets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=clonesets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=clonesets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=imagepulljobs,verbs=get;list;watch;create;delete

// Reconciler reconciles CloneSets.
type Reconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events. They default to the
	// manager's, Clock to the real clock.
	reconcilerdeps.Deps
	// APIReader reads pods past the cache after a lost write race; defaults to the manager's.
	APIReader client.Reader
	// Workers is the number of concurrent reconciles; 0 means 3 (upstream's default).
	Workers int
	// NewID returns a random instance id; defaults to 5 random lowercase letters and digits.
	NewID func() string
	// PreDownloadImages creates ImagePullJobs ahead of in-place updates (gate PreDownloadImageForInPlaceUpdate).
	PreDownloadImages bool
	// RecreateOnVCTChange recreates, rather than updates in place, pods whose revision recorded other
	// volumeClaimTemplates than the update revision (gate RecreatePodWhenChangeVCTInCloneSetGate).
	RecreateOnVCTChange bool
	// AllowInPlaceUpdate, when set, is asked before a pod is updated in place: the modules' checks (a
	// PodUnavailableBudget's, with PodUnavailableBudgetUpdateGate).
	AllowInPlaceUpdate func(ctx context.Context, pod *corev1.Pod) (bool, error)

	// expectations hold the controller's pod writes, claimExpectations its claim creations, until the
	// cache shows them.
	expectations, claimExpectations *expectations.Expectations
	// createSlots and settleSlots bound the creates and the settling writes in flight (createWorkers).
	createSlots, settleSlots chan struct{}
	// pods reads pods by controller (podclaim.ControllerIndex).
	pods *cacheindex.Pods
	// preDownloads pulls new images ahead of in-place updates; nil without PreDownloadImages.
	preDownloads *predownload.Syncer
}

// SetupWithManager registers the controller: it watches CloneSets, the pods and claims they own and the
// orphan pods they may adopt.
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
		For(&kruiseappsv1alpha1.CloneSet{}).
		Watches(&corev1.Pod{}, paced.OwnedPods(cloneSetKind.GroupKind())).
		Watches(&corev1.Pod{}, r.adopters(), builder.WithPredicates(orphans.Predicate)).
		Owns(&corev1.PersistentVolumeClaim{}).
		Complete(r)
}

func (r *Reconciler) setDefaults(mgr ctrl.Manager) {
	r.Default(mgr, ControllerName)
	r.createSlots, r.settleSlots = make(chan struct{}, createWorkers), make(chan struct{}, createWorkers)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.NewID == nil {
		r.NewID = randomID
	}
	r.expectations = expectations.New(r.Clock, expectationsTTL)
	r.claimExpectations = expectations.New(r.Clock, expectationsTTL)
	r.preDownloads = predownload.New(r.PreDownloadImages, r.Client, r.Recorder)
}

// Reconcile brings one CloneSet one step closer to its spec and reports its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cs := &kruiseappsv1alpha1.CloneSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, cs); err != nil {
		r.expectations.Forget(req.NamespacedName)
		r.claimExpectations.Forget(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cs.DeletionTimestamp != nil {
		// Pods, claims and revisions carry owner references: the garbage collector removes them.
		return ctrl.Result{}, nil
	}
	sel, err := selectorOf(cs)
	if err != nil {
		return ctrl.Result{}, r.failed(ctx, cs, kruiseappsv1alpha1.CloneSetConditionFailedScale, reconcile.TerminalError(err))
	}
	w, err := r.gather(ctx, cs, sel)
	if err != nil {
		return ctrl.Result{}, err
	}
	wait := max(expectations.Wait(r.expectations, req.NamespacedName, w.pods),
		expectations.Wait(r.claimExpectations, req.NamespacedName, w.claims))
	if wait > 0 {
		return ctrl.Result{RequeueAfter: min(wait, time.Second)}, nil
	}
	revs, err := r.syncRevisions(ctx, cs, w)
	if err != nil {
		return ctrl.Result{}, r.failed(ctx, cs, kruiseappsv1alpha1.CloneSetConditionFailedUpdate, err)
	}
	in := r.input(cs, w, revs)
	syncErr := r.sync(ctx, cs, w, revs, in)
	// A failed pre-download is reported as a failed update and retried, but the step itself observed the spec.
	preErr := r.preDownloads.Sync(ctx, plan.PreDownloadWorkload(cs), predownload.FromCurrent(revs.current, revs.update, revs.template))
	stepErr := errors.Join(syncErr, failedAs(kruiseappsv1alpha1.CloneSetConditionFailedUpdate, preErr))
	requeue, err := r.writeStatus(ctx, cs, w, in, stepErr, syncErr == nil)
	if err = errors.Join(stepErr, err); apierrors.IsConflict(err) {
		// A pod changed under a guarded write (the kubelet reported): look again with the new state.
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	w.wakeIn(requeue)
	return ctrl.Result{RequeueAfter: w.wake}, err
}

// conflictRetry is how soon a reconcile that lost a write race looks again.
const conflictRetry = 100 * time.Millisecond

// sync runs one step: finish in-place updates and lifecycle moves, then scale; only when scaling has
// nothing to do does it update pods, so that one reconcile never both adds and replaces pods.
func (r *Reconciler) sync(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, w *world, revs *revisions, in plan.Input) error {
	if err := r.refresh(ctx, cs, w, revs); err != nil {
		return failedAs(kruiseappsv1alpha1.CloneSetConditionFailedUpdate, err)
	}
	scale := plan.PlanScale(in)
	ctrl.LoggerFrom(ctx).V(1).Info("Planned scale", "pods", len(in.Pods), "replicas", in.Strategy.Replicas,
		"create", scale.Create, "delete", podNames(scale.Delete), "freeIDs", in.FreeIDs, "claims", len(w.claims))
	if !scale.Empty() || scale.Limited {
		return failedAs(kruiseappsv1alpha1.CloneSetConditionFailedScale, r.scale(ctx, cs, w, revs, scale))
	}
	if err := r.cleanupClaims(ctx, cs, w, in); err != nil {
		return failedAs(kruiseappsv1alpha1.CloneSetConditionFailedScale, err)
	}
	return failedAs(kruiseappsv1alpha1.CloneSetConditionFailedUpdate, r.update(ctx, cs, w, revs, plan.PlanUpdate(in)))
}

func podNames(pods []*corev1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names
}
