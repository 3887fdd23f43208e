package podrouting

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// ControllerName names the controller and its logs.
const ControllerName = "persistentpodstate-pod-routing"

// resync re-checks the conditions now and then: a chart upgrade puts the file's values back.
const resync = time.Minute

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;patch

// Reconciler keeps the conditions of Configuration's pod webhooks.
type Reconciler struct {
	// Client lists PersistentPodStates from the cache and patches; Reader reads the webhook configuration,
	// which the manager does not cache. Both default to the manager's.
	Client        client.Client
	Reader        client.Reader
	Configuration string
}

// SetupWithManager runs the controller when a PersistentPodState comes or goes, at start and every resync.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Reader == nil {
		r.Reader = mgr.GetAPIReader()
	}
	start := make(chan event.GenericEvent, 1)
	if err := mgr.Add(manager.RunnableFunc(func(context.Context) error {
		start <- event.GenericEvent{Object: &kruiseappsv1alpha1.PersistentPodState{}}
		return nil
	})); err != nil {
		return err
	}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: PodWebhook}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named(ControllerName).
		Watches(&kruiseappsv1alpha1.PersistentPodState{}, one, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		WatchesRawSource(source.Channel(start, one)).
		Complete(r)
}

// Reconcile routes StatefulSet pods through mpod.kb.io while a PersistentPodState exists.
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	list := &kruiseappsv1alpha1.PersistentPodStateList{}
	if err := r.Client.List(ctx, list, client.Limit(1)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing PersistentPodStates: %w", err)
	}
	on := len(list.Items) > 0
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: r.Configuration}, cfg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patch, ok := Patch(cfg, on)
	if !ok {
		return ctrl.Result{RequeueAfter: resync}, nil
	}
	if err := r.Client.Patch(ctx, cfg, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return ctrl.Result{}, fmt.Errorf("routing StatefulSet pods through %s (%v): %w", PodWebhook, on, err)
	}
	ctrl.LoggerFrom(ctx).Info("Switched the pod webhook for StatefulSet pods", "persistentPodStatesExist", on)
	return ctrl.Result{RequeueAfter: resync}, nil
}
