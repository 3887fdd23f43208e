// Package podwebhook keeps the sidecarset module's pod webhook (msidecarset-pod.kb.io) narrow while no
// SidecarSet exists: that webhook is called for every new pod mpod.kb.io leaves, which costs a round trip to
// the manager per pod and is worth it only when some SidecarSet may inject, or when the pod asks for
// container launch priority. Its matchCondition "sidecarsets-or-launch-priority" holds true while the cache
// holds a SidecarSet, and otherwise launchPriorityOnly.
package podwebhook

import (
	"context"
	"encoding/json"
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

// The webhook and condition the controller keeps.
const (
	WebhookName   = "msidecarset-pod.kb.io"
	ConditionName = "sidecarsets-or-launch-priority"
)

// LaunchPriorityOnly is the condition's expression while no SidecarSet exists: pods that ask for container
// launch priority, by the annotation or a container's KRUISE_CONTAINER_PRIORITY.
const LaunchPriorityOnly = "(has(object.metadata.annotations) && " +
	"'apps.kruise.io/container-launch-priority' in object.metadata.annotations) || " +
	"object.spec.containers.exists(c, has(c.env) && c.env.exists(e, e.name == 'KRUISE_CONTAINER_PRIORITY'))"

// ControllerName names the controller and its logs.
const ControllerName = "sidecarset-pod-webhook"

// resync re-checks the condition now and then: a chart upgrade puts the file's value back.
const resync = time.Minute

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;patch

// Reconciler keeps the condition of Configuration's WebhookName.
type Reconciler struct {
	// Client lists SidecarSets from the cache; Reader reads the webhook configuration, which the manager
	// does not cache. Both default to the manager's.
	Client        client.Client
	Reader        client.Reader
	Configuration string
}

// SetupWithManager runs the controller when a SidecarSet comes or goes, at start and every resync. Updates
// are left out: every status write of every SidecarSet is one, and only existence counts here.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Reader == nil {
		r.Reader = mgr.GetAPIReader()
	}
	start := make(chan event.GenericEvent, 1)
	if err := mgr.Add(manager.RunnableFunc(func(context.Context) error {
		start <- event.GenericEvent{Object: &kruiseappsv1alpha1.SidecarSet{}}
		return nil
	})); err != nil {
		return err
	}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: WebhookName}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named(ControllerName).
		Watches(&kruiseappsv1alpha1.SidecarSet{}, one, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		WatchesRawSource(source.Channel(start, one)).
		Complete(r)
}

// Reconcile sets the condition to true while a SidecarSet exists, else to LaunchPriorityOnly.
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	list := &kruiseappsv1alpha1.SidecarSetList{}
	if err := r.Client.List(ctx, list, client.Limit(1)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing SidecarSets: %w", err)
	}
	want := LaunchPriorityOnly
	if len(list.Items) > 0 {
		want = "true"
	}
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: r.Configuration}, cfg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patch, ok := conditionPatch(cfg, want)
	if !ok {
		return ctrl.Result{RequeueAfter: resync}, nil
	}
	if err := r.Client.Patch(ctx, cfg, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return ctrl.Result{}, fmt.Errorf("setting %s of %s to %s: %w", ConditionName, WebhookName, want, err)
	}
	ctrl.LoggerFrom(ctx).Info("Switched the SidecarSet pod webhook", "sidecarSetsExist", want == "true")
	return ctrl.Result{RequeueAfter: resync}, nil
}

// conditionPatch is the JSON patch that sets the condition's expression to want, testing that the webhook
// and the condition are still where they were read; ok is false when nothing is to change (or the
// configuration has no such condition: an installation whose chart does not narrow the webhook).
func conditionPatch(cfg *admissionregistrationv1.MutatingWebhookConfiguration, want string) ([]byte, bool) {
	for i, w := range cfg.Webhooks {
		if w.Name != WebhookName {
			continue
		}
		for j, c := range w.MatchConditions {
			if c.Name != ConditionName || c.Expression == want {
				continue
			}
			base := fmt.Sprintf("/webhooks/%d", i)
			cond := fmt.Sprintf("%s/matchConditions/%d", base, j)
			patch, _ := json.Marshal([]map[string]string{ // strings always marshal
				{"op": "test", "path": base + "/name", "value": WebhookName},
				{"op": "test", "path": cond + "/name", "value": ConditionName},
				{"op": "replace", "path": cond + "/expression", "value": want},
			})
			return patch, true
		}
	}
	return nil, false
}
