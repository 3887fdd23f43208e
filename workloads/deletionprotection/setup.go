// Package deletionprotection is Flotilla's deletion protection module, upstream OpenKruise's
// ResourcesDeletionProtection: validating webhooks that refuse deleting a Namespace, Service, Ingress,
// CustomResourceDefinition, Deployment, ReplicaSet, StatefulSet, CloneSet, Advanced StatefulSet or
// UnitedDeployment labelled policy.kruise.io/delete-protection while its rule (Always, or Cascading: while it
// still has replicas, active pods, Bound claims or custom resources) forbids it. It runs no controller.
package deletionprotection

import (
	"context"
	"fmt"

	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
	dpadmission "github.com/flotilla-dev/flotilla/workloads/deletionprotection/admission"
)

// SetupWithManager serves the deletion protection webhooks. They are served whatever the gates say, so the
// chart's configuration always finds them; with ResourcesDeletionProtection off they allow everything, as
// upstream's. The Cascading check of a CustomResourceDefinition also needs DeletionProtectionForCRDCascadingGate.
func SetupWithManager(_ context.Context, mgr manager.Manager, opts module.Options) error {
	meta, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("creating the metadata client of deletion protection: %w", err)
	}
	counter := &APICounter{Reader: mgr.GetAPIReader(), Metadata: meta}
	return RegisterWebhooks(mgr.GetWebhookServer(), counter, Options(opts.Features))
}

// Options are the module's gates: ResourcesDeletionProtection, and the CRD gate only with it (upstream turns
// the CRD gate off when the main one is off).
func Options(g feature.Gates) dpadmission.Options {
	on := g.Enabled(feature.ResourcesDeletionProtection)
	return dpadmission.Options{Enabled: on, CRDCascading: on && g.Enabled(feature.DeletionProtectionForCRDCascadingGate)}
}
