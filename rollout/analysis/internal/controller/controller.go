// Package controller is the AnalysisRun controller: it resolves a run's templates and arguments, takes each
// metric's measurements when they are due through the Prometheus, web and Job providers, and records them,
// the metrics' phases and the run's in the run's status. Planning is in ../plan; this package gathers,
// measures and writes.
package controller

import (
	"context"
	"errors"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/plan"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/provider"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// ControllerName names the controller, its logs and the source of its events.
const ControllerName = "analysisrun-controller"

// staleRetry is how soon a reconcile whose status write lost a race looks again; its measurements are
// dropped rather than recorded twice.
const staleRetry = 100 * time.Millisecond

// defaultWorkers is the number of runs measured at once: measurements wait on the network.
const defaultWorkers = 10

// +kubebuilder:rbac:groups=analysis.flotilla.dev,resources=analysisruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=analysis.flotilla.dev,resources=analysisruns/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=analysis.flotilla.dev,resources=analysisruns/finalizers,verbs=update
// +kubebuilder:rbac:groups=analysis.flotilla.dev,resources=analysistemplates;clusteranalysistemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles AnalysisRuns.
type Reconciler struct {
	// Client reads runs, templates and Jobs from the manager's cache and writes; Recorder records events;
	// schedules, measurement times and conditions read Clock. They default to the manager's and the real clock.
	reconcilerdeps.Deps
	// APIReader reads the Secrets metrics name, straight from the API server (caching every Secret of a
	// cluster would cost far more); it defaults to the manager's.
	APIReader client.Reader
	// Workers is the number of concurrent reconciles; 0 means defaultWorkers.
	Workers int

	prometheus, web provider.Provider
	job             *provider.Job
}

// SetupWithManager registers the controller: it watches AnalysisRuns (creation and spec changes; its own
// status writes do not wake it, its schedule does) and the Jobs they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.setDefaults(mgr)
	workers := r.Workers
	if workers <= 0 {
		workers = defaultWorkers
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&analysisv1alpha1.AnalysisRun{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&batchv1.Job{}).
		Complete(r)
}

func (r *Reconciler) setDefaults(mgr ctrl.Manager) {
	r.Default(mgr, ControllerName)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	clients := &provider.HTTPClients{}
	r.prometheus = &provider.Prometheus{Clients: clients, Secrets: r.secret}
	r.web = &provider.Web{Clients: clients, Secrets: r.secret}
	r.job = &provider.Job{Client: r.Client}
}

// Reconcile advances one run: resolve what it measures, take the measurements that are due, record them and
// the phases they lead to, and come back when the next one is due.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	run := &analysisv1alpha1.AnalysisRun{}
	if err := r.Client.Get(ctx, req.NamespacedName, run); err != nil || run.DeletionTimestamp != nil {
		// Jobs carry controller references: the garbage collector removes them with the run.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before, status := run.Status, run.Status.DeepCopy() // advance changes the copy only
	next, taken, err := r.advance(ctx, run, status)
	var unresolvable *unresolvableError
	if err != nil && !errors.As(err, &unresolvable) {
		return ctrl.Result{}, err
	}
	plan.SetConditions(status, run.Generation, r.Clock.Now())
	if werr := r.writeStatus(ctx, run, status); apierrors.IsConflict(werr) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	} else if werr != nil {
		return ctrl.Result{}, werr
	}
	r.recordTransitions(run, &before, taken)
	if unresolvable != nil {
		return ctrl.Result{}, reconcile.TerminalError(unresolvable)
	}
	return ctrl.Result{RequeueAfter: next}, nil
}
