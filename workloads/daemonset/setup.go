// Package daemonset is Flotilla's Advanced DaemonSet module: the DaemonSet controller, its admission webhooks
// and the pod readiness machinery its pods rely on. The control the Rollout engine releases Advanced
// DaemonSets with is the engine's (rollout/control), since it releases those that upstream OpenKruise runs
// too.
package daemonset

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/daemonset/internal/controller"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// Kinds are the kinds the module needs served before it runs.
var Kinds = []schema.GroupVersionKind{kruiseappsv1alpha1.GroupVersion.WithKind("DaemonSet")}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "DaemonSet"}}

// SetupWithManager registers the Advanced DaemonSet controller, the pod readiness controller (shared with the
// other workload modules: its pods carry the KruisePodReady gate) and the DaemonSet admission webhooks.
func SetupWithManager(_ context.Context, mgr manager.Manager, opts module.Options) error {
	if err := newReconciler(opts.Features).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the DaemonSet controller: %w", err)
	}
	if err := podreadiness.SetupWithManager(mgr, Reconciles...); err != nil {
		return fmt.Errorf("setting up the pod readiness controller: %w", err)
	}
	return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetScheme())
}

// newReconciler is the controller as the manager's feature gates configure it (upstream's gate).
func newReconciler(g feature.Gates) *controller.Reconciler {
	return &controller.Reconciler{PreDownloadImages: g.Enabled(feature.PreDownloadImageForDaemonSetUpdate)}
}
