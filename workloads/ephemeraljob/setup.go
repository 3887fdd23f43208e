// Package ephemeraljob is Flotilla's EphemeralJob module: the controller that adds ephemeral containers to the
// pods a job selects, and the job's validating webhook.
package ephemeraljob

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/rollout/module"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/ephemeraljob/internal/controller"
)

// Kinds are the kinds the module needs served before it runs.
var Kinds = []schema.GroupVersionKind{kruiseappsv1alpha1.GroupVersion.WithKind("EphemeralJob")}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "EphemeralJob"}}

// SetupWithManager registers the EphemeralJob controller and its validating webhook.
func SetupWithManager(_ context.Context, mgr manager.Manager, _ module.Options) error {
	if err := (&controller.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the EphemeralJob controller: %w", err)
	}
	return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetScheme())
}
