// Package deployment is the Advanced Deployment controller: it rolls out a Deployment that a
// partition-style release holds (paused, strategy Recreate, control-info annotation) by scaling its
// ReplicaSets itself, so that the number of pods in the deployment-strategy annotation's partition run
// the new template. kube-controller-manager does not roll a paused Deployment; it only keeps its status.
package deployment

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/reconcileutil"
	"github.com/flotilla-dev/flotilla/workloads/expectations"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
)

// ControllerName names the controller, its logs and the events it records.
const ControllerName = "advanced-deployment"

// expectationsTTL bounds how long a reconcile waits for the cache to show its own writes.
const expectationsTTL = 30 * time.Second

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps,resources=deployments/status,verbs=patch
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler drives the ReplicaSets of Deployments under a partition-style release.
type Reconciler struct {
	// Client reads from the manager's cache and writes; Recorder records events, without the event budget
	// (setDefaults). They default to the manager's, Clock to the real clock.
	reconcilerdeps.Deps
	// APIReader reads past the cache, only to tell a name collision from a ReplicaSet the cache has not seen
	// yet; it defaults to the manager's.
	APIReader client.Reader
	// Workers is the number of concurrent reconciles; 0 means 1.
	Workers int

	expectations *expectations.Expectations
	// extraWritten is when each Deployment's extra status was last written (or the controller first saw it
	// under a release), so that its progress-only writes share the progress budget.
	extraWritten reconcileutil.ProgressWrites
}

// SetupWithManager registers the controller with the manager's client, cache, event recorder and the
// real clock.
func SetupWithManager(mgr ctrl.Manager) error {
	return (&Reconciler{}).SetupWithManager(mgr)
}

// SetupWithManager registers the controller: it watches Deployments under a release and the
// ReplicaSets they control.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.setDefaults(mgr)
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		For(&appsv1.Deployment{}, builder.WithPredicates(predicate.NewPredicateFuncs(underControl))).
		Owns(&appsv1.ReplicaSet{}).
		Complete(r)
}

func (r *Reconciler) setDefaults(mgr ctrl.Manager) {
	// No event budget: this controller has always recorded each scaling event in full, naming its
	// ReplicaSet, and folding them would change what `kubectl describe deployment` shows.
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	r.Default(mgr, ControllerName)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.expectations = expectations.New(r.Clock, expectationsTTL)
}

// underControl reports whether a partition-style release holds the Deployment: control-info set,
// strategy Recreate and paused.
func underControl(obj client.Object) bool {
	d, ok := obj.(*appsv1.Deployment)
	return ok && control.PartitionHeld(d)
}

// Reconcile plans the ReplicaSet sizes of one Deployment and writes them.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	d := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !underControl(d) || d.DeletionTimestamp != nil {
		r.expectations.Forget(req.NamespacedName)
		r.extraWritten.Forget(d.UID)
		return ctrl.Result{}, nil
	}
	s, _, err := control.DeploymentStrategyFrom(d.Annotations)
	if err != nil {
		return ctrl.Result{}, r.invalid(d, err)
	}
	if s.RollingStyle == rolloutsv1beta1.CanaryRollingStyle {
		return ctrl.Result{}, nil
	}
	sets, err := r.replicaSets(ctx, d)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wait := expectations.WaitFor(r.expectations, req.NamespacedName, sets); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	wait, err := r.sync(ctx, d, s, sets)
	return ctrl.Result{RequeueAfter: wait}, err
}

// sync plans and applies one round, then records the extra status, or says how soon to record it.
func (r *Reconciler) sync(ctx context.Context, d *appsv1.Deployment, s rolloutsv1beta1.DeploymentStrategy,
	sets []appsv1.ReplicaSet) (time.Duration, error) {
	newRS, old := control.SplitReplicaSets(d, sets)
	plan, err := Compute(planInput(d, s, newRS, old))
	if err != nil {
		return 0, r.invalid(d, err)
	}
	applied, err := r.apply(ctx, d, newRS, old, plan)
	if err != nil || !applied {
		return 0, err
	}
	return r.patchExtraStatus(ctx, d, plan.Status)
}

// invalid reports a Deployment the controller cannot act on until someone fixes it; the fix is an
// update that triggers a new reconcile, so no retry.
func (r *Reconciler) invalid(d *appsv1.Deployment, err error) error {
	r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, "InvalidStrategy", "Reconcile", "%v", err)
	return reconcile.TerminalError(err)
}

// replicaSets lists from the cache the ReplicaSets d controls, without a copy: a reconcile only reads them,
// and each write starts from a copy of its own (scale).
func (r *Reconciler) replicaSets(ctx context.Context, d *appsv1.Deployment) ([]appsv1.ReplicaSet, error) {
	if _, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil {
		return nil, r.invalid(d, fmt.Errorf("selector: %w", err))
	}
	return control.OwnedReplicaSets(ctx, r.Client, d, client.UnsafeDisableDeepCopy)
}
