// Package resourcedistribution is Flotilla's ResourceDistribution module: the controller that copies a
// Secret or ConfigMap into the namespaces a ResourceDistribution targets and keeps the copies in sync, and
// its validating webhook. Both sit behind upstream's ResourceDistributionGate, off by default.
package resourcedistribution

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/resourcedistribution/internal/controller"
)

// Kinds are the kinds the module needs served before it runs.
var Kinds = []schema.GroupVersionKind{kruiseappsv1alpha1.GroupVersion.WithKind("ResourceDistribution")}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "ResourceDistribution"}}

// SetupWithManager registers the ResourceDistribution controller and its validating webhook when the
// ResourceDistributionGate is on. With the gate off, as upstream, no controller runs and the webhook refuses
// every create and update, so that no distribution is accepted that nothing would act on.
func SetupWithManager(_ context.Context, mgr manager.Manager, opts module.Options) error {
	if !opts.Features.Enabled(feature.ResourceDistributionGate) {
		return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetScheme(), errGateOff)
	}
	if err := (&controller.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ResourceDistribution controller: %w", err)
	}
	return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetScheme(), nil)
}

// errGateOff is upstream's refusal while the gate is off.
var errGateOff = fmt.Errorf("feature-gate %s is not enabled", feature.ResourceDistributionGate)
