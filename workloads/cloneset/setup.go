// Package cloneset is Flotilla's CloneSet module: the CloneSet controller, its admission webhooks and the pod
// readiness machinery its pods rely on. The controls the Rollout engine releases CloneSets with are the
// engine's (rollout/control), since it releases CloneSets that upstream OpenKruise runs too.
package cloneset

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/controller"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// Kinds are the kinds the module needs served before it runs.
var Kinds = []schema.GroupVersionKind{kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet")}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "CloneSet"}}

// SetupWithManager registers the CloneSet controller, the pod readiness controller, the CloneSet admission
// webhooks and the module's part of the pod webhook.
func SetupWithManager(_ context.Context, mgr manager.Manager, opts module.Options) error {
	if err := newReconciler(opts.Features, opts.InPlaceUpdates).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the CloneSet controller: %w", err)
	}
	if err := podreadiness.SetupWithManager(mgr, Reconciles...); err != nil {
		return fmt.Errorf("setting up the pod readiness controller: %w", err)
	}
	// The pod webhook injects a gate the pod readiness controller above initialises: both or neither.
	return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetClient(), mgr.GetScheme(), opts.PodMutations)
}

// newReconciler is the CloneSet controller as the manager's feature gates configure it: image pre-download,
// and recreating pods whose volumeClaimTemplates changed (upstream's gates); it asks checks (the modules'
// disruption budgets) before each in-place update.
func newReconciler(g feature.Gates, checks *module.InPlaceUpdateChecks) *controller.Reconciler {
	return &controller.Reconciler{
		PreDownloadImages:   g.Enabled(feature.PreDownloadImageForInPlaceUpdate),
		RecreateOnVCTChange: g.Enabled(feature.RecreatePodWhenChangeVCTInCloneSetGate),
		AllowInPlaceUpdate:  checks.Allow,
	}
}
