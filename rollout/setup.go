// Package rollout is the Rollout/BatchRelease engine module of flotilla-manager.
package rollout

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flotilla-dev/flotilla/rollout/admission"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/conversion"
	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/batchrelease"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/deployment"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/nativedaemonset"
	rolloutcontroller "github.com/flotilla-dev/flotilla/rollout/internal/controller/rollout"
	"github.com/flotilla-dev/flotilla/rollout/internal/controller/rollouthistory"
	trafficroutingcontroller "github.com/flotilla-dev/flotilla/rollout/internal/controller/trafficrouting"
	"github.com/flotilla-dev/flotilla/rollout/internal/metrics"
	"github.com/flotilla-dev/flotilla/rollout/module"
	"github.com/flotilla-dev/flotilla/trafficrouting"
	"github.com/flotilla-dev/flotilla/trafficrouting/custom"
	"github.com/flotilla-dev/flotilla/trafficrouting/gateway"
	"github.com/flotilla-dev/flotilla/trafficrouting/ingress"
	"github.com/flotilla-dev/flotilla/trafficrouting/luavm"
)

// Kinds are the kinds the engine needs served before it runs.
var Kinds = []schema.GroupVersionKind{
	rolloutsv1beta1.GroupVersion.WithKind("Rollout"),
	rolloutsv1beta1.GroupVersion.WithKind("BatchRelease"),
}

// Reconciles are the kinds the engine runs controllers for (RolloutHistory with its feature gate).
var Reconciles = []schema.GroupKind{
	{Group: rolloutsv1beta1.GroupVersion.Group, Kind: "Rollout"}, {Group: rolloutsv1beta1.GroupVersion.Group, Kind: "BatchRelease"},
	{Group: rolloutsv1beta1.GroupVersion.Group, Kind: "TrafficRouting"}, {Group: rolloutsv1beta1.GroupVersion.Group, Kind: "RolloutHistory"},
}

// ConversionCRDs are the engine's CRDs served in two versions, v1beta1 (storage) and v1alpha1, that convert
// through the manager's /convert webhook.
var ConversionCRDs = []string{"rollouts.rollouts.kruise.io", "batchreleases.rollouts.kruise.io"}

// Convert adds the conversions of ConversionCRDs to the manager's registry.
var Convert = conversion.Register

// SetupWithManager registers the engine on the manager: the Rollout and BatchRelease controllers
// with the workload controls they drive (every kind's: see rollout/control), the drivers of native
// workloads, and the admission webhooks.
func SetupWithManager(_ context.Context, mgr manager.Manager, opts module.Options) error {
	gates := readGates(opts.Features)
	controls := control.NewRegistry()
	if err := control.RegisterNative(controls, gates.advancedDeployment); err != nil {
		return err
	}
	if err := control.IndexReplicaSets(mgr); err != nil {
		return err
	}
	if err := setupControllers(mgr, opts, gates, controls); err != nil {
		return err
	}
	validation := admission.Options{FilterWorkloadType: opts.FilterWorkloadType, PartitionPercentLimit: opts.PartitionPercentLimit}
	readers := Readers{Cached: mgr.GetClient(), Live: mgr.GetAPIReader()}
	return RegisterWebhooks(mgr.GetWebhookServer(), readers, mgr.GetScheme(), validation)
}

// engineGates are the feature gates the engine reads, once, while it is wired.
type engineGates struct {
	advancedDeployment bool
	keepPausedOnDelete bool
	rolloutHistory     bool
	appendPodSelector  bool
}

func readGates(g feature.Gates) engineGates {
	return engineGates{
		advancedDeployment: g.Enabled(feature.AdvancedDeployment),
		keepPausedOnDelete: g.Enabled(feature.KeepWorkloadPausedOnRolloutDeletion),
		rolloutHistory:     g.Enabled(feature.RolloutHistory),
		appendPodSelector:  g.Enabled(feature.AppendPodSelector),
	}
}

// trafficProviders is the engine's explicit list of traffic routing providers, in the order they are applied.
// Lua scripts may be overridden from the configuration ConfigMap, read from the cache (the manager caches
// ConfigMaps of the configuration namespace only).
func trafficProviders(mgr manager.Manager, namespace string) *trafficrouting.Registry {
	vm := luavm.New(luavm.Options{})
	scripts := trafficrouting.ConfigMapScripts{Reader: mgr.GetClient(), Namespace: namespace}
	r := trafficrouting.NewRegistry()
	r.Register("ingress", ingress.Factory(mgr.GetClient(), vm, scripts))
	r.Register("gateway", gateway.Factory(mgr.GetClient(), mgr.GetRESTMapper()))
	r.Register("custom", custom.Factory(mgr.GetClient(), vm, scripts))
	return r
}

func setupControllers(mgr manager.Manager, opts module.Options, gates engineGates, controls *control.Registry) error {
	engineMetrics, err := metrics.NewEngine(ctrlmetrics.Registry)
	if err != nil {
		return err
	}
	// One registry for both: the Rollout controller and the TrafficRouting controller drive the same providers.
	traffic := trafficProviders(mgr, opts.ConfigNamespace())
	rollouts := &rolloutcontroller.Reconciler{
		Client: mgr.GetClient(), Controls: controls, Clock: clock.RealClock{}, Metrics: engineMetrics, Workers: opts.ReleaseWorkers,
		Recorder:           mgr.GetEventRecorder(rolloutcontroller.ControllerName),
		KeepPausedOnDelete: gates.keepPausedOnDelete,
		Traffic:            traffic,
		AppendPodSelector:  gates.appendPodSelector,
		Analysis:           slices.Contains(opts.Modules, "analysis"),
	}
	trafficRoutings := &trafficroutingcontroller.Reconciler{
		Client: mgr.GetClient(), Clock: clock.RealClock{}, Traffic: traffic,
		Recorder: mgr.GetEventRecorder(trafficroutingcontroller.ControllerName),
	}
	batches := &batchrelease.Reconciler{
		Client: mgr.GetClient(), Controls: controls, Clock: clock.RealClock{}, Metrics: engineMetrics, Workers: opts.ReleaseWorkers,
		Recorder: mgr.GetEventRecorder(batchrelease.ControllerName),
	}
	setups := []func(manager.Manager) error{rollouts.SetupWithManager, batches.SetupWithManager, trafficRoutings.SetupWithManager, nativedaemonset.SetupWithManager}
	if gates.advancedDeployment {
		setups = append(setups, (&deployment.Reconciler{Workers: opts.ReleaseWorkers}).SetupWithManager)
	}
	if gates.rolloutHistory {
		histories := &rollouthistory.Reconciler{
			Client: mgr.GetClient(), Reader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder(rollouthistory.ControllerName),
		}
		setups = append(setups, histories.SetupWithManager)
	}
	for _, setup := range setups {
		if err := setup(mgr); err != nil {
			return fmt.Errorf("setting up controllers: %w", err)
		}
	}
	return nil
}
