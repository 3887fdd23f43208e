// Package workloadspread is Flotilla's WorkloadSpread module: a WorkloadSpread spreads the pods of one
// workload (CloneSet, Deployment, ReplicaSet, Job, StatefulSet or Advanced StatefulSet) over ordered subsets
// of nodes, each with an optional maxReplicas. The pod webhook places each new pod in the first subset with
// room (node affinity, tolerations, patch, the matched-workloadspread annotation), the pod validating
// webhook gives a deleted pod's room back at once, and the controller derives the status from the pods and
// sets their deletion costs so that scale-down empties the later subsets and the surplus first.
package workloadspread

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/reconcilerdeps"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread/internal/controller"
)

// Kinds are the kinds the module needs served before it runs.
var Kinds = []schema.GroupVersionKind{kruiseappsv1alpha1.GroupVersion.WithKind("WorkloadSpread")}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "WorkloadSpread"}}

// SetupWithManager registers the controller, the validating webhook, the module's parts of the pod
// webhooks, and the route that sends the pods of spread workloads to the pod webhook while WorkloadSpreads
// exist. With the WorkloadSpread gate off (upstream's, on by default) the module does nothing.
func SetupWithManager(_ context.Context, mgr manager.Manager, opts module.Options) error {
	return setup(mgr, opts, nil)
}

// setup is SetupWithManager with the controller's clock (nil: the real one), which tests move ahead to see
// the webhooks' entries expire without waiting for upstream's deadlines.
func setup(mgr manager.Manager, opts module.Options, clk clock.PassiveClock) error {
	if !opts.Features.Enabled(feature.WorkloadSpread) {
		return nil
	}
	if err := controller.IndexTargets(mgr); err != nil {
		return err
	}
	r := &controller.Reconciler{KruiseWorkloads: served(mgr.GetRESTMapper(), kruiseWorkloads...), Deps: reconcilerdeps.Deps{Clock: clk}}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the WorkloadSpread controller: %w", err)
	}
	if opts.PodRoutes != nil {
		opts.PodRoutes.Add(PodRoute())
	}
	hooks := Hooks{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), Scheme: mgr.GetScheme()}
	return hooks.Register(mgr.GetWebhookServer(), opts.PodMutations, opts.PodValidations)
}

// kruiseWorkloads are the target kinds of other modules whose replicas the controller watches when served.
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
