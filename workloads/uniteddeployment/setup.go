// Package uniteddeployment is Flotilla's UnitedDeployment module: the controller that spreads one workload
// template over groups of nodes (subsets), running a CloneSet, Advanced StatefulSet, StatefulSet or
// Deployment per subset, and its admission webhooks.
package uniteddeployment

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/rollout/module"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/uniteddeployment/internal/controller"
)

// Kinds are the kinds the module needs served before it runs: the controller watches the two kruise kinds
// of subset workloads too.
var Kinds = []schema.GroupVersionKind{
	kruiseappsv1alpha1.GroupVersion.WithKind("UnitedDeployment"),
	kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet"),
	kruiseappsv1beta1.GroupVersion.WithKind("StatefulSet"),
}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "UnitedDeployment"}}

// SetupWithManager registers the UnitedDeployment controller and its admission webhooks.
func SetupWithManager(_ context.Context, mgr manager.Manager, _ module.Options) error {
	if err := (&controller.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the UnitedDeployment controller: %w", err)
	}
	return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetScheme())
}
