// Package sidecarset is Flotilla's SidecarSet module: the pod webhook's injection of sidecars into new
// pods, the controller that updates the sidecars of running pods in place, and the SidecarSet admission
// webhooks.
package sidecarset

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
	sidecarsetadmission "github.com/flotilla-dev/flotilla/sidecarset/admission"
	"github.com/flotilla-dev/flotilla/sidecarset/internal/controller"
	"github.com/flotilla-dev/flotilla/sidecarset/internal/launchpriority"
	"github.com/flotilla-dev/flotilla/sidecarset/internal/podwebhook"
	"github.com/flotilla-dev/flotilla/sidecarset/internal/terminator"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Kinds are the kinds the module needs served before it runs.
var Kinds = []schema.GroupVersionKind{kruiseappsv1alpha1.GroupVersion.WithKind("SidecarSet")}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "SidecarSet"}}

// SetupWithManager registers the SidecarSet controller, its admission webhooks, its pod mutations (sidecar
// injection, then container launch priority), the container launch priority controller, the switch that
// calls its pod webhook only while SidecarSets exist and, behind its gate, the sidecar terminator.
// SidecarSets are cluster-scoped, so their ControllerRevisions live in the manager's namespace.
func SetupWithManager(_ context.Context, mgr manager.Manager, opts module.Options) error {
	if opts.PodMutations == nil {
		return errors.New("the SidecarSet module needs the pod webhook chain")
	}
	if err := (&controller.Reconciler{Namespace: opts.Namespace}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the SidecarSet controller: %w", err)
	}
	if err := setupTerminator(mgr, opts.Features); err != nil {
		return err
	}
	if opts.MutatingWebhookConfiguration != "" {
		if err := podwebhook.Switch(opts.MutatingWebhookConfiguration).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the pod webhook switch: %w", err)
		}
	}
	injector := &podInjector{reader: mgr.GetClient(), namespace: opts.Namespace, clock: clock.RealClock{}}
	opts.PodMutations.Add(injector.mutate)
	// Launch priority runs after injection: injected sidecars take their place in the order.
	opts.PodMutations.Add(assignLaunchPriority)
	if err := (&launchpriority.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the container launch priority controller: %w", err)
	}
	rules := sidecarsetadmission.Options{
		PatchPodMetadataDefaultsAllowed: opts.Features.Enabled(feature.SidecarSetPatchPodMetadataDefaultsAllowed),
	}
	return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetClient(), mgr.GetScheme(),
		WebhookOptions{ConfigurationNamespace: opts.ConfigNamespace(), Rules: rules})
}

// setupTerminator registers the sidecar terminator when its gate is on (off by default, as upstream).
func setupTerminator(mgr manager.Manager, gates feature.Gates) error {
	if !gates.Enabled(feature.SidecarTerminator) {
		return nil
	}
	if err := (&terminator.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the sidecar terminator: %w", err)
	}
	return nil
}
