// Package podunavailablebudget is Flotilla's PodUnavailableBudget module: the controller that counts a
// budget's pods and reports its status, its part of the pod validating webhook, which refuses the updates,
// deletions and evictions of pods beyond their budget (evictions with 429, as a PodDisruptionBudget), the
// check the workload modules ask before they update a pod in place, and the budget's validating webhook. The
// pod checks sit behind upstream's gates: PodUnavailableBudgetDeleteGate (deletions and evictions, on by
// default) and PodUnavailableBudgetUpdateGate (updates, off by default).
package podunavailablebudget

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
	"github.com/flotilla-dev/flotilla/webhooks"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/eventbudget"
	"github.com/flotilla-dev/flotilla/workloads/podunavailablebudget/internal/controller"
	"github.com/flotilla-dev/flotilla/workloads/podunavailablebudget/internal/guard"
)

// Kinds are the kinds the module needs served before it runs.
var Kinds = []schema.GroupVersionKind{kruisepolicyv1alpha1.GroupVersion.WithKind("PodUnavailableBudget")}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruisepolicyv1alpha1.GroupVersion.Group, Kind: "PodUnavailableBudget"}}

// guardEvents names the source of the events the pod checks record on the pods they refuse.
const guardEvents = "podunavailablebudget-webhook"

// SetupWithManager registers the PodUnavailableBudget controller, adds the module's check to the pod
// validating chain and, with PodUnavailableBudgetUpdateGate, to the checks before in-place updates, and
// serves the budget's validating webhook. With both gates off, as upstream, no controller runs, the pod
// check lets every pod through (the chart still configures it) and the webhook refuses every budget.
func SetupWithManager(_ context.Context, mgr manager.Manager, opts module.Options) error {
	deletions := opts.Features.Enabled(feature.PodUnavailableBudgetDeleteGate)
	updates := opts.Features.Enabled(feature.PodUnavailableBudgetUpdateGate)
	g := guard.New(mgr.GetClient(), mgr.GetAPIReader(), eventbudget.New(mgr.GetEventRecorder(guardEvents)))
	if opts.PodValidations != nil {
		opts.PodValidations.Add(g.Validation(deletions, updates))
	}
	if !deletions && !updates {
		return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetClient(), mgr.GetScheme(), errGatesOff)
	}
	if updates && opts.InPlaceUpdates != nil {
		opts.InPlaceUpdates.Add(g.AllowInPlaceUpdate)
	}
	r := &controller.Reconciler{KruiseWorkloads: served(mgr.GetRESTMapper(), kruiseWorkloads...)}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PodUnavailableBudget controller: %w", err)
	}
	return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetClient(), mgr.GetScheme(), nil)
}

// PodValidation is the module's check in the pod validating chain, as SetupWithManager adds it: budgets are
// read through c (the manager's cache) and, after a lost write race, reader; refusals are recorded with
// recorder on the pods.
func PodValidation(c client.Client, reader client.Reader, recorder events.EventRecorder, deletions, updates bool) webhooks.PodValidation {
	return guard.New(c, reader, recorder).Validation(deletions, updates)
}

// errGatesOff is upstream's refusal of budgets while both gates are off.
var errGatesOff = fmt.Errorf("feature PodUnavailableBudget is invalid, please open via feature-gate(%s, %s)",
	feature.PodUnavailableBudgetDeleteGate, feature.PodUnavailableBudgetUpdateGate)

// kruiseWorkloads are the workload kinds of other modules whose replicas budgets count when they are served.
var kruiseWorkloads = []schema.GroupVersionKind{
	kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet"), kruiseappsv1beta1.GroupVersion.WithKind("StatefulSet"),
}

// served reports whether the API server serves every kind.
func served(mapper meta.RESTMapper, kinds ...schema.GroupVersionKind) bool {
	for _, gvk := range kinds {
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return false
		}
	}
	return true
}
