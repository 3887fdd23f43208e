// Package broadcastjob is Flotilla's BroadcastJob module: the controller that runs a pod to completion on
// every eligible node, and its admission webhooks.
package broadcastjob

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/rollout/module"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/broadcastjob/internal/controller"
)

// Kinds are the kinds the module needs served before it runs.
var Kinds = []schema.GroupVersionKind{kruiseappsv1alpha1.GroupVersion.WithKind("BroadcastJob")}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "BroadcastJob"}}

// SetupWithManager registers the BroadcastJob controller and its admission webhooks.
func SetupWithManager(_ context.Context, mgr manager.Manager, _ module.Options) error {
	if err := (&controller.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the BroadcastJob controller: %w", err)
	}
	return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetScheme())
}
