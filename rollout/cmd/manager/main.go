// Command manager is flotilla-manager: every Flotilla controller and webhook in one process.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	_ "time/tzdata" // the zone database, for AdvancedCronJob time zones: the manager's image holds only the binary

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/flotilla-dev/flotilla/nodeagent"
	"github.com/flotilla-dev/flotilla/rollout"
	"github.com/flotilla-dev/flotilla/rollout/analysis"
	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/internal/metrics"
	"github.com/flotilla-dev/flotilla/rollout/module"
	"github.com/flotilla-dev/flotilla/sidecarset"
	"github.com/flotilla-dev/flotilla/webhooks"
	"github.com/flotilla-dev/flotilla/webhooks/matchconditions"
	"github.com/flotilla-dev/flotilla/workloads/advancedcronjob"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1/promoted"
	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/broadcastjob"
	"github.com/flotilla-dev/flotilla/workloads/cloneset"
	"github.com/flotilla-dev/flotilla/workloads/daemonset"
	"github.com/flotilla-dev/flotilla/workloads/deletionprotection"
	"github.com/flotilla-dev/flotilla/workloads/ephemeraljob"
	"github.com/flotilla-dev/flotilla/workloads/persistentpodstate"
	"github.com/flotilla-dev/flotilla/workloads/podcache"
	"github.com/flotilla-dev/flotilla/workloads/podunavailablebudget"
	"github.com/flotilla-dev/flotilla/workloads/resourcedistribution"
	"github.com/flotilla-dev/flotilla/workloads/statefulset"
	"github.com/flotilla-dev/flotilla/workloads/uniteddeployment"
	"github.com/flotilla-dev/flotilla/workloads/unreconciled"
	"github.com/flotilla-dev/flotilla/workloads/workloadspread"
)

// modules is the manager's literal module table; a module joins Flotilla by adding its line here.
var modules = []module.Module{
	{Name: "rollout", Kinds: rollout.Kinds, Reconciles: rollout.Reconciles, ConversionCRDs: rollout.ConversionCRDs, Convert: rollout.Convert,
		Setup: rollout.SetupWithManager},
	{Name: "analysis", Kinds: analysis.Kinds, Reconciles: analysis.Reconciles, Setup: analysis.SetupWithManager},
	{Name: "cloneset", Kinds: cloneset.Kinds, Reconciles: cloneset.Reconciles, Setup: cloneset.SetupWithManager},
	// After cloneset (the readiness gate) and before sidecarset and podunavailablebudget: upstream's pod webhook
	// places a pod in its WorkloadSpread subset before it injects sidecars, and its pod validating webhook
	// records a deletion in the WorkloadSpread before the budgets check it.
	{Name: "workloadspread", Kinds: workloadspread.Kinds, Reconciles: workloadspread.Reconciles, Setup: workloadspread.SetupWithManager},
	{Name: "statefulset", Kinds: statefulset.Kinds, Reconciles: statefulset.Reconciles, Setup: statefulset.SetupWithManager},
	{Name: "daemonset", Kinds: daemonset.Kinds, Reconciles: daemonset.Reconciles, ConversionCRDs: daemonset.ConversionCRDs,
		Convert: daemonset.Convert, Setup: daemonset.SetupWithManager},
	{Name: "ephemeraljob", Kinds: ephemeraljob.Kinds, Reconciles: ephemeraljob.Reconciles, Setup: ephemeraljob.SetupWithManager},
	{Name: "broadcastjob", Kinds: broadcastjob.Kinds, Reconciles: broadcastjob.Reconciles, Setup: broadcastjob.SetupWithManager},
	{Name: "nodeagent", Kinds: nodeagent.Kinds, Reconciles: nodeagent.Reconciles, Setup: nodeagent.SetupWithManager},
	{Name: "advancedcronjob", Kinds: advancedcronjob.Kinds, Reconciles: advancedcronjob.Reconciles, Setup: advancedcronjob.SetupWithManager},
	{Name: "resourcedistribution", Kinds: resourcedistribution.Kinds, Reconciles: resourcedistribution.Reconciles,
		Setup: resourcedistribution.SetupWithManager},
	{Name: "uniteddeployment", Kinds: uniteddeployment.Kinds, Reconciles: uniteddeployment.Reconciles,
		Setup: uniteddeployment.SetupWithManager},
	{Name: "deletionprotection", Setup: deletionprotection.SetupWithManager},
	{Name: "podunavailablebudget", Kinds: podunavailablebudget.Kinds, Reconciles: podunavailablebudget.Reconciles,
		Setup: podunavailablebudget.SetupWithManager},
	// After cloneset: the pod chain adds the readiness gate before the sidecars, as upstream's pod webhook does.
	{Name: "sidecarset", Kinds: sidecarset.Kinds, Reconciles: sidecarset.Reconciles, ConversionCRDs: sidecarset.ConversionCRDs,
		Convert: sidecarset.Convert, Setup: sidecarset.SetupWithManager},
	// After sidecarset: the pod chain adds a recorded pod's node affinity last, as upstream's pod webhook does.
	{Name: "persistentpodstate", Kinds: persistentpodstate.Kinds, Reconciles: persistentpodstate.Reconciles,
		Setup: persistentpodstate.SetupWithManager},
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		rolloutsv1alpha1.AddToScheme, rolloutsv1beta1.AddToScheme, analysisv1alpha1.AddToScheme,
		kruiseappsv1alpha1.AddToScheme, kruiseappsv1beta1.AddToScheme, promoted.AddToScheme, kruisepolicyv1alpha1.AddToScheme,
		// HTTPRoutes the Gateway API traffic provider changes.
		gatewayv1.Install, gatewayv1beta1.Install,
	} {
		utilruntime.Must(add(s))
	}
	return s
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "flotilla-manager:", err)
		os.Exit(1)
	}
}

func run() error {
	gates, err := feature.NewGate()
	if err != nil {
		return err
	}
	opts := options{featureGates: gates, zap: zap.Options{}}
	opts.bind(flag.CommandLine)
	flag.Parse()
	if err := opts.validate(); err != nil {
		return err
	}
	debug.SetGCPercent(opts.gcPercent)
	ctrl.SetLogger(lazyLogger(zap.New(zap.UseFlagOptions(&opts.zap))))
	ctx := ctrl.SetupSignalHandler()

	mgr, err := newManager(opts)
	if err != nil {
		return err
	}
	if err := setup(ctx, mgr, opts); err != nil {
		return err
	}
	ctrl.Log.Info("Starting manager")
	return mgr.Start(ctx)
}

// Leader election holds a Lease and records core events in the manager's own namespace.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=flotilla-system,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups="",namespace=flotilla-system,resources=events,verbs=create;patch

func newManager(opts options) (ctrl.Manager, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.UserAgent = "flotilla-manager"
	if err := metrics.InstrumentClient(cfg, ctrlmetrics.Registry); err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  newScheme(),
		Metrics:                 metricsserver.Options{BindAddress: opts.metricsAddr},
		HealthProbeBindAddress:  opts.probeAddr,
		PprofBindAddress:        opts.pprofAddr,
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        "flotilla-manager.kruise.io",
		LeaderElectionNamespace: opts.leaderElectionNS,
		// A stopping leader gives the Lease up, so a rolling update's new replica leads at once instead of
		// after a lease duration; safe because run returns, and the process ends, as soon as Start does.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &opts.leaseDuration,
		RenewDeadline:                 &opts.renewDeadline,
		RetryPeriod:                   &opts.retryPeriod,
		WebhookServer:                 webhook.NewServer(webhook.Options{Port: opts.webhookPort, CertDir: opts.webhookCertDir}),
		Cache:                         cacheOptions(opts),
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	return mgr, nil
}

// cacheOptions narrows what the manager caches: ConfigMaps only from the namespace of the configuration
// ConfigMap (traffic scripts); caching every ConfigMap of a cluster would cost far more.
// No cached object keeps its managedFields, which nothing here reads and which take a large share of every
// pod's size; an update sent from a cached object leaves them out, and the API server keeps them. Pods of
// native workloads are cached slim (podcache).
func cacheOptions(opts options) cache.Options {
	strip := cache.TransformStripManagedFields()
	return cache.Options{
		DefaultTransform: strip,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{opts.configurationNamespace(): {}}},
			&corev1.Pod{}:       {Transform: podcache.Transform(strip)},
		},
	}
}

// setup wires the selected modules, what they contribute to the shared webhooks, the webhook certificates
// and the probes.
func setup(ctx context.Context, mgr ctrl.Manager, opts options) error {
	shared := sharedHooks{pods: &webhooks.PodChain{}, podValidations: &webhooks.PodValidationChain{}, inPlace: &module.InPlaceUpdateChecks{},
		podRoutes: &matchconditions.PodRoutes{}}
	run, err := setupModules(ctx, mgr, opts, shared)
	if err != nil {
		return err
	}
	if err := shared.podRoutes.SetupWithManager(mgr, mutatingWebhookConfiguration); err != nil {
		return fmt.Errorf("setting up the pod webhook routing: %w", err)
	}
	conversions, err := registerConversions(mgr.GetScheme(), converting(run))
	if err != nil {
		return err
	}
	if err := unreconciled.SetupWithManager(mgr, unreconciledKinds(mgr, run)); err != nil {
		return err
	}
	if err := webhooks.RegisterPodChain(mgr.GetWebhookServer(), mgr.GetScheme(), shared.pods); err != nil {
		return err
	}
	if err := webhooks.RegisterPodValidationChain(mgr.GetWebhookServer(), mgr.GetScheme(), mgr.GetClient(), shared.podValidations); err != nil {
		return err
	}
	certs, err := webhooks.Register(mgr, webhookOptions(opts, run), conversions)
	if err != nil {
		return fmt.Errorf("setting up webhooks: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("webhook-certs", certs.Checker)
}

// mutatingWebhookConfiguration is the chart's mutating webhook configuration.
const mutatingWebhookConfiguration = "flotilla-mutating-webhook-configuration"

// webhookOptions names Flotilla's webhook objects; the certificate manager keeps them pointed at this process.
func webhookOptions(opts options, run []module.Module) webhooks.Options {
	return webhooks.Options{
		Namespace:                          opts.webhookNamespace,
		SecretName:                         opts.webhookSecretName,
		ServiceName:                        opts.webhookServiceName,
		Host:                               opts.webhookHost,
		RenewBefore:                        opts.webhookCertRenew,
		MutatingWebhookConfigurationName:   mutatingWebhookConfiguration,
		ValidatingWebhookConfigurationName: "flotilla-validating-webhook-configuration",
		ConversionCRDs:                     conversionCRDs(run),
	}
}

// ownedGroups are the API groups whose kinds this installation serves for itself: the engine's, Flotilla's
// own analysis group, and the workload groups unless only the engine (with analysis, which upstream lacks)
// runs beside upstream OpenKruise, which reconciles those.
func ownedGroups(run []module.Module) []string {
	groups := []string{rolloutsv1beta1.GroupVersion.Group, analysisv1alpha1.GroupVersion.Group}
	if slices.ContainsFunc(run, func(m module.Module) bool { return m.Name != "rollout" && m.Name != "analysis" }) {
		groups = append(groups, kruiseappsv1alpha1.GroupVersion.Group, kruisepolicyv1alpha1.GroupVersion.Group)
	}
	return groups
}

// unreconciledKinds are the served kinds of the owned groups that no running module reconciles.
func unreconciledKinds(mgr ctrl.Manager, run []module.Module) []schema.GroupVersionKind {
	var reconciled []schema.GroupKind
	for _, m := range run {
		reconciled = append(reconciled, m.Reconciles...)
	}
	return unreconciled.Kinds(mgr.GetScheme(), mgr.GetRESTMapper(), ownedGroups(run), reconciled)
}

// conversionCRDs are the CRDs whose conversion this manager serves: those of the converting modules.
func conversionCRDs(run []module.Module) []string {
	var names []string
	for _, m := range converting(run) {
		names = append(names, m.ConversionCRDs...)
	}
	return names
}

// converting are the modules of the table whose CRDs this installation owns, running or not: their CRDs are
// installed either way, and reading them needs the conversion. An engine-only manager beside upstream
// OpenKruise leaves the apps.kruise.io and policy.kruise.io CRDs (and their conversion webhooks) to it.
func converting(run []module.Module) []module.Module {
	owned := ownedGroups(run)
	var out []module.Module
	for _, m := range modules {
		if len(m.ConversionCRDs) > 0 && groupsOwned(m.ConversionCRDs, owned) {
			out = append(out, m)
		}
	}
	return out
}

// groupsOwned reports whether every CRD (<plural>.<group>) is of an owned group.
func groupsOwned(crds, owned []string) bool {
	for _, crd := range crds {
		if _, group, _ := strings.Cut(crd, "."); !slices.Contains(owned, group) {
			return false
		}
	}
	return true
}

// registerConversions collects the converting modules' conversions for the /convert webhook.
func registerConversions(scheme *runtime.Scheme, converting []module.Module) (conversion.Registry, error) {
	registry := conversion.NewRegistry()
	for _, m := range converting {
		if m.Convert == nil {
			return nil, fmt.Errorf("module %s names CRDs to convert but no conversion", m.Name)
		}
		if err := m.Convert(scheme, registry); err != nil {
			return nil, fmt.Errorf("module %s: %w", m.Name, err)
		}
	}
	return registry, nil
}

// sharedHooks are what the modules add to while they set themselves up and the manager serves (the pod
// webhooks) or the modules ask each other through (checks before in-place updates) once all are set up.
type sharedHooks struct {
	pods           *webhooks.PodChain
	podValidations *webhooks.PodValidationChain
	inPlace        *module.InPlaceUpdateChecks
	podRoutes      *matchconditions.PodRoutes
}

// setupModules sets up the modules of the table that run, and returns them.
func setupModules(ctx context.Context, mgr ctrl.Manager, opts options, shared sharedHooks) ([]module.Module, error) {
	run, skipped, err := module.Select(modules, opts.modules(), servedBy(mgr))
	if err != nil {
		return nil, err
	}
	log := ctrl.Log.WithName("modules")
	for _, s := range skipped {
		log.Info("Skipping module", "module", s.Name, "reason", s.Reason)
	}
	mopts := module.Options{Features: feature.Resolve(opts.featureGates), PodMutations: shared.pods,
		PodValidations: shared.podValidations, InPlaceUpdates: shared.inPlace, PodRoutes: shared.podRoutes,
		MutatingWebhookConfiguration: mutatingWebhookConfiguration,
		Namespace:                    opts.webhookNamespace, ConfigurationNamespace: opts.configurationNamespace(),
		FilterWorkloadType: opts.filterWorkloadType, PartitionPercentLimit: opts.partitionLimit, ReleaseWorkers: opts.releaseWorkers}
	for _, m := range run {
		mopts.Modules = append(mopts.Modules, m.Name)
	}
	for _, m := range run {
		if err := m.Setup(ctx, mgr, mopts); err != nil {
			return nil, fmt.Errorf("setting up module %s: %w", m.Name, err)
		}
		log.Info("Module set up", "module", m.Name)
	}
	return run, nil
}

// servedBy asks the manager's REST mapper whether the apiserver serves a kind (a missing CRD means no).
func servedBy(mgr ctrl.Manager) module.Served {
	return func(gvk schema.GroupVersionKind) (bool, error) {
		_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil {
			return true, nil
		}
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, err
	}
}
