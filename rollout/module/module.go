// Package module is the contract between the manager and the modules it runs: each module is one entry of the
// manager's literal table, names the kinds it needs, and sets itself up on the shared manager.
package module

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/webhooks"
	"github.com/flotilla-dev/flotilla/webhooks/matchconditions"
)

// Options is what every module receives from the composition root.
type Options struct {
	// Features holds the manager's feature gates, resolved at start-up. A module reads the gates it uses
	// while it sets itself up, by their feature constants, and passes booleans down.
	Features feature.Gates
	// PodMutations collects what modules change in pods at creation; the manager serves the chain on the
	// pod webhook once every module has added to it.
	PodMutations *webhooks.PodChain
	// PodValidations collects what modules check of pod updates, deletions and evictions; the manager serves
	// the chain on the pod validating webhook once every module has added to it.
	PodValidations *webhooks.PodValidationChain
	// InPlaceUpdates collects what workload modules ask before they update a pod in place.
	InPlaceUpdates *InPlaceUpdateChecks
	// PodRoutes collects which pods modules need on the pod chain while objects of their kinds exist; the
	// manager runs one controller that keeps the pod webhooks' conditions for all of them.
	PodRoutes *matchconditions.PodRoutes
	// MutatingWebhookConfiguration names the manager's mutating webhook configuration, whose webhooks a
	// module may narrow at run time.
	MutatingWebhookConfiguration string
	// Namespace is the namespace the manager runs in.
	Namespace string
	// FilterWorkloadType and PartitionPercentLimit are upstream's --filter-workload-type and
	// --partition-percent-limit: which workload kinds a Rollout may name, and how large a partition-style step
	// with traffic may be.
	FilterWorkloadType    bool
	PartitionPercentLimit int
	// ReleaseWorkers is how many objects each of the engine's release controllers (Rollout, BatchRelease, the
	// Deployment controller of partition-style releases) reconciles at once.
	ReleaseWorkers int
	// ConfigurationNamespace holds the kruise-rollout-configuration ConfigMap: the manager's namespace unless
	// told otherwise (upstream's is kruise-rollout).
	ConfigurationNamespace string
	// Modules names the modules that run in this manager, for a module that works with another when it runs
	// (the engine waits for analysis only where the analysis module creates the runs).
	Modules []string
}

// DefaultReleaseWorkers is ReleaseWorkers unless --release-workers says otherwise: kube-controller-manager's
// default for Deployments (--concurrent-deployment-syncs).
const DefaultReleaseWorkers = 5

// ConfigNamespace is the namespace of the configuration ConfigMap: ConfigurationNamespace, else Namespace.
func (o Options) ConfigNamespace() string {
	if o.ConfigurationNamespace != "" {
		return o.ConfigurationNamespace
	}
	return o.Namespace
}

// Module is one entry of the manager's module table.
type Module struct {
	// Name is what --enable-modules refers to.
	Name string
	// Kinds must all be served by the apiserver; otherwise the module logs and skips itself.
	Kinds []schema.GroupVersionKind
	// Reconciles are the kinds the module runs a controller for; the manager warns about objects of served
	// kinds no running module reconciles (and the README's table of kinds says which are which).
	Reconciles []schema.GroupKind
	// ConversionCRDs name the module's CRDs (<plural>.<group>) that convert between their versions through
	// the manager's /convert webhook, and Convert adds their conversions to the manager's registry. The
	// manager serves them whenever this installation owns the CRDs' group, even with the module switched off:
	// the chart installs the CRDs either way, and reading them needs the conversion.
	ConversionCRDs []string
	Convert        func(*runtime.Scheme, conversion.Registry) error
	// Setup registers the module's controllers and webhook handlers.
	Setup func(ctx context.Context, mgr manager.Manager, opts Options) error
}

// Skipped says why a module of the table does not run.
type Skipped struct {
	Name   string
	Reason string
}

// Served reports whether the apiserver serves a kind.
type Served func(schema.GroupVersionKind) (bool, error)

// Select picks the modules to run: those named in enabled ("*" or empty means all) whose kinds are all served.
// Unknown names in enabled are an error so that a typo in a flag is not silently ignored.
func Select(table []Module, enabled []string, served Served) ([]Module, []Skipped, error) {
	if err := checkNames(table, enabled); err != nil {
		return nil, nil, err
	}
	var run []Module
	var skipped []Skipped
	for _, m := range table {
		if !isEnabled(m.Name, enabled) {
			skipped = append(skipped, Skipped{Name: m.Name, Reason: "disabled by --enable-modules"})
			continue
		}
		missing, err := missingKinds(m.Kinds, served)
		if err != nil {
			return nil, nil, fmt.Errorf("module %s: %w", m.Name, err)
		}
		if len(missing) > 0 {
			skipped = append(skipped, Skipped{Name: m.Name, Reason: "kinds not served: " + strings.Join(missing, ", ")})
			continue
		}
		run = append(run, m)
	}
	return run, skipped, nil
}

func isEnabled(name string, enabled []string) bool {
	return len(enabled) == 0 || slices.Contains(enabled, "*") || slices.Contains(enabled, name)
}

func checkNames(table []Module, enabled []string) error {
	known := make([]string, 0, len(table))
	for _, m := range table {
		known = append(known, m.Name)
	}
	for _, name := range enabled {
		if name != "*" && !slices.Contains(known, name) {
			sort.Strings(known)
			return fmt.Errorf("unknown module %q in --enable-modules (known: %s)", name, strings.Join(known, ", "))
		}
	}
	return nil
}

func missingKinds(kinds []schema.GroupVersionKind, served Served) ([]string, error) {
	var missing []string
	for _, gvk := range kinds {
		ok, err := served(gvk)
		if err != nil {
			return nil, fmt.Errorf("checking %s: %w", gvk, err)
		}
		if !ok {
			missing = append(missing, gvk.GroupKind().String()+"/"+gvk.Version)
		}
	}
	return missing, nil
}
