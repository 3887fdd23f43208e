// Package binding is the RolloutAnalysis controller: it binds AnalysisRuns to a Rollout's releases. For the
// Rollout's current release it creates the run of each gated step when the release waits in
// StepMetricsAnalysis at that step, and the background run from its starting step on; it terminates the runs
// a new revision, a retry or the release's end leaves behind, and reports the current attempt's runs, Ready
// and Stalled in the RolloutAnalysis's status, which the Rollout engine reads to gate its steps. Planning is
// pure (plan.go); apply.go writes.
package binding

import (
	"context"
	"errors"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// ControllerName names the controller, its logs and the source of its events.
const ControllerName = "rolloutanalysis-controller"

// staleRetry is how soon a reconcile whose status write lost a race looks again.
const staleRetry = 100 * time.Millisecond

// defaultWorkers is the number of RolloutAnalyses reconciled at once: each reconcile is a few cache reads
// and at most a few writes.
const defaultWorkers = 4

// +kubebuilder:rbac:groups=analysis.flotilla.dev,resources=rolloutanalyses,verbs=get;list;watch
// +kubebuilder:rbac:groups=analysis.flotilla.dev,resources=rolloutanalyses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=analysis.flotilla.dev,resources=rolloutanalyses/finalizers,verbs=update
// +kubebuilder:rbac:groups=analysis.flotilla.dev,resources=analysisruns,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=rollouts.kruise.io,resources=rollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles RolloutAnalyses.
type Reconciler struct {
	// Client, Recorder and Clock default to the manager's and the real clock; Clock stamps the conditions.
	reconcilerdeps.Deps
	// Workers is the number of concurrent reconciles; 0 means defaultWorkers.
	Workers int
}

// SetupWithManager registers the controller: it watches RolloutAnalyses (spec and annotation changes: its own
// status writes do not wake it), the runs they own, the Rollouts they name, and the other RolloutAnalyses of
// the same Rollout coming and going (one per Rollout acts).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.Default(mgr, ControllerName)
	if err := indexRolloutRef(mgr); err != nil {
		return err
	}
	workers := r.Workers
	if workers <= 0 {
		workers = defaultWorkers
	}
	rolloutName := func(o client.Object) string { return o.GetName() }
	rolloutRef := func(o client.Object) string { return o.(*analysisv1alpha1.RolloutAnalysis).Spec.RolloutRef.Name }
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&analysisv1alpha1.RolloutAnalysis{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&analysisv1alpha1.AnalysisRun{}, builder.WithPredicates(runChanged)).
		Watches(&rolloutsv1beta1.Rollout{}, analysesOf(r.Client, rolloutName)).
		Watches(&analysisv1alpha1.RolloutAnalysis{}, analysesOf(r.Client, rolloutRef), builder.WithPredicates(comingOrGoing)).
		Complete(r)
}

// runChanged passes what the binding reads of its runs changing: phase, message, untilTerminated, spec,
// deletion. A new measurement alone changes none of them, so a run measuring every few seconds wakes nothing
// here.
var runChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		was, is := e.ObjectOld.(*analysisv1alpha1.AnalysisRun), e.ObjectNew.(*analysisv1alpha1.AnalysisRun)
		return was.Status.Phase != is.Status.Phase || was.Status.Message != is.Status.Message ||
			was.Status.UntilTerminated != is.Status.UntilTerminated || was.Generation != is.Generation ||
			(was.DeletionTimestamp == nil) != (is.DeletionTimestamp == nil)
	},
}

// comingOrGoing passes a RolloutAnalysis's creation, deletion and the start of its deletion.
var comingOrGoing = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// Reconcile reads the RolloutAnalysis, its Rollout, its rivals and its runs, plans, and applies the plan.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ra := &analysisv1alpha1.RolloutAnalysis{}
	if err := r.Client.Get(ctx, req.NamespacedName, ra); err != nil || ra.DeletionTimestamp != nil {
		// Runs carry controller references: the garbage collector removes them with the RolloutAnalysis.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	in, err := r.gather(ctx, ra)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := Compute(in)
	if err := r.apply(ctx, ra, &p); apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// gather reads the planner's input from the cache.
func (r *Reconciler) gather(ctx context.Context, ra *analysisv1alpha1.RolloutAnalysis) (Input, error) {
	in := Input{Analysis: ra, Now: metav1.NewTime(r.Clock.Now())}
	ro := &rolloutsv1beta1.Rollout{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: ra.Namespace, Name: ra.Spec.RolloutRef.Name}, ro); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return in, err
	default:
		in.Rollout = ro
	}
	rivals, err := naming(ctx, r.Client, ra.Namespace, ra.Spec.RolloutRef.Name)
	if err != nil {
		return in, err
	}
	// The cache may not list this RolloutAnalysis yet; it competes all the same.
	rivals = slices.DeleteFunc(rivals, func(o analysisv1alpha1.RolloutAnalysis) bool { return o.Name == ra.Name })
	if w := Winner(append(rivals, *ra)); w != ra.Name {
		in.Winner = w
	}
	in.Runs, err = r.ownedRuns(ctx, ra)
	return in, err
}

// ownedRuns are the runs the RolloutAnalysis created: labelled with its name and controlled by it (not by an
// earlier RolloutAnalysis of the same name).
func (r *Reconciler) ownedRuns(ctx context.Context, ra *analysisv1alpha1.RolloutAnalysis) ([]analysisv1alpha1.AnalysisRun, error) {
	list := &analysisv1alpha1.AnalysisRunList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ra.Namespace),
		client.MatchingLabels{analysisv1alpha1.RolloutAnalysisLabel: ra.Name}); err != nil {
		return nil, errors.Join(errors.New("listing the RolloutAnalysis's runs"), err)
	}
	return slices.DeleteFunc(list.Items, func(run analysisv1alpha1.AnalysisRun) bool {
		owner := metav1.GetControllerOf(&run)
		return owner == nil || owner.UID != ra.UID
	}), nil
}
