// Package advancedcronjob is Flotilla's AdvancedCronJob module: the controller that creates a Job or a
// BroadcastJob on each run of a cron schedule, and its admission webhooks. BroadcastJobs it creates are run
// by the BroadcastJob controller, Jobs by kube-controller-manager's.
package advancedcronjob

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/rollout/module"
	"github.com/flotilla-dev/flotilla/workloads/advancedcronjob/internal/controller"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Kinds are the kinds the module needs served before it runs: it creates and watches BroadcastJobs too.
var Kinds = []schema.GroupVersionKind{
	kruiseappsv1alpha1.GroupVersion.WithKind("AdvancedCronJob"),
	kruiseappsv1alpha1.GroupVersion.WithKind("BroadcastJob"),
}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "AdvancedCronJob"}}

// SetupWithManager registers the AdvancedCronJob controller and its admission webhooks.
func SetupWithManager(_ context.Context, mgr manager.Manager, _ module.Options) error {
	if err := (&controller.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the AdvancedCronJob controller: %w", err)
	}
	return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetScheme())
}
