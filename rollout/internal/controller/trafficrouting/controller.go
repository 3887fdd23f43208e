// Package trafficrouting runs TrafficRoutings (rollouts.kruise.io/v1alpha1): standalone traffic control for
// several workloads released together. While any Rollout holds a progressing.rollouts.kruise.io/<rollout>
// finalizer on a TrafficRouting, the providers of its objectRef[0] route spec.strategy; when the last one goes,
// or the TrafficRouting is deleted, the original routes come back.
//
// Phases: Initial -> Healthy (the objects exist) -> Progressing (a Rollout drives it) -> Finalizing (routes
// being restored) -> Healthy; Terminating once deleted.
package trafficrouting

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/reconcileutil"
	"github.com/flotilla-dev/flotilla/trafficrouting"
)

// ControllerName is the controller's name in logs, metrics and events.
const ControllerName = "trafficrouting-controller"

// Reconciler reconciles TrafficRoutings.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	// Traffic builds the providers of objectRef[0]; the same registry the Rollout controller uses.
	Traffic *trafficrouting.Registry
	// changes remembers each TrafficRouting's last routing change, for its grace period.
	changes reconcileutil.NetworkChanges
}

// +kubebuilder:rbac:groups=rollouts.kruise.io,resources=trafficroutings,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=rollouts.kruise.io,resources=trafficroutings/status;trafficroutings/finalizers,verbs=get;update;patch

// SetupWithManager registers the controller; without the TrafficRouting CRD it logs and stays off, as a
// module without its CRDs does.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	gvk := rolloutsv1alpha1.GroupVersion.WithKind("TrafficRouting")
	_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		mgr.GetLogger().Info("TrafficRouting is not served; its controller is off", "controller", ControllerName)
		return nil
	}
	if err != nil {
		return fmt.Errorf("looking up TrafficRouting: %w", err)
	}
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&rolloutsv1alpha1.TrafficRouting{}).
		Complete(r)
}

// Reconcile moves a TrafficRouting one step through its phases.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	tr := &rolloutsv1alpha1.TrafficRouting{}
	if err := r.Client.Get(ctx, req.NamespacedName, tr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.addFinalizer(ctx, tr); err != nil {
		return reconcileutil.RetryConflicts(err)
	}
	d := Plan(tr.Status, r.observe(ctx, tr))
	if err := r.apply(ctx, tr, d); err != nil {
		return reconcileutil.RetryConflicts(err)
	}
	if d.Err != nil {
		return reconcile.Result{}, d.Err
	}
	return reconcile.Result{RequeueAfter: d.RequeueAfter}, nil
}

// observe reads the TrafficRouting's facts and runs the provider call of its stage.
func (r *Reconciler) observe(ctx context.Context, tr *rolloutsv1alpha1.TrafficRouting) Facts {
	f := Facts{
		Generation:   tr.Generation,
		Deleting:     !tr.DeletionTimestamp.IsZero(),
		HasFinalizer: controllerutil.ContainsFinalizer(tr, rolloutsv1beta1.TrafficRoutingFinalizer),
		Progressing:  heldByRollout(tr.Finalizers),
		Grace:        gracePeriod(tr.Spec),
	}
	routes, routesErr := routesOf(tr.Spec.Strategy)
	f.Routes = describeRoutes(routes)
	c := stageOf(tr.Status.Phase, f).call()
	f.Outcome = r.run(ctx, tr, c, routes, routesErr)
	f.Now = r.Clock.Now()
	if c != callNone && f.Outcome.Err == nil && !f.Outcome.Done {
		r.changes.Mark(tr.UID, f.Now)
	}
	f.LastChange = r.changes.Last(tr.UID)
	ctrl.LoggerFrom(ctx).V(1).Info("Observed", "phase", tr.Status.Phase, "progressing", f.Progressing, "done", f.Outcome.Done)
	return f
}
