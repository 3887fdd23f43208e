// Package statefulset is Flotilla's Advanced StatefulSet module: the controller of apps.kruise.io
// StatefulSets (v1beta1, and v1alpha1 which the API server serves from the same objects), its admission
// webhooks, and the pod readiness controller its pods rely on. The control the Rollout engine releases
// Advanced StatefulSets with is the engine's (rollout/control), since it also releases sets that upstream
// OpenKruise runs.
package statefulset

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/admission"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/internal/controller"
)

// Kinds are the kinds the module needs served before it runs.
var Kinds = []schema.GroupVersionKind{kruiseappsv1beta1.GroupVersion.WithKind("StatefulSet")}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1beta1.GroupVersion.Group, Kind: "StatefulSet"}}

// SetupWithManager registers the Advanced StatefulSet controller, the pod readiness controller (shared with
// the other workload modules: the KruisePodReady gate of the set's pods needs it) and the admission webhooks.
func SetupWithManager(_ context.Context, mgr manager.Manager, opts module.Options) error {
	if err := newReconciler(opts.Features, opts.InPlaceUpdates).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Advanced StatefulSet controller: %w", err)
	}
	if err := podreadiness.SetupWithManager(mgr, Reconciles...); err != nil {
		return fmt.Errorf("setting up the pod readiness controller: %w", err)
	}
	return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetClient(), mgr.GetScheme(), admissionOptions(opts.Features))
}

// newReconciler is the controller as the manager's feature gates configure it (upstream's gates); it asks
// checks (the modules' disruption budgets) before each in-place update.
func newReconciler(g feature.Gates, checks *module.InPlaceUpdateChecks) *controller.Reconciler {
	return &controller.Reconciler{
		StartOrdinal:       g.Enabled(feature.StatefulSetStartOrdinal),
		RetainClaims:       g.Enabled(feature.StatefulSetAutoDeletePVC),
		ResizeClaims:       g.Enabled(feature.StatefulSetAutoResizePVCGate),
		IndexLabel:         g.Enabled(feature.PodIndexLabel),
		PreDownloadImages:  g.Enabled(feature.PreDownloadImageForInPlaceUpdate),
		AllowInPlaceUpdate: checks.Allow,
	}
}

// admissionOptions are the defaults the gates ask for.
func admissionOptions(g feature.Gates) admission.Options {
	return admission.Options{
		AutoDeletePVC: g.Enabled(feature.StatefulSetAutoDeletePVC),
		AutoResizePVC: g.Enabled(feature.StatefulSetAutoResizePVCGate),
	}
}
