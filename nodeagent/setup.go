// Package nodeagent is Flotilla's node agent module. The agent itself (cmd/nodeagent) runs on every node
// and recreates containers and pulls images through CRI; this package is the manager's side of it: the
// ContainerRecreateRequest webhook (defaults, validation, what the agent needs copied from the pod), the
// controller that keeps requests in step with their pods and ends them, and the controller that keeps one
// NodeImage per node.
package nodeagent

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/crrmanager"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/nodeimagemanager"
	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Kinds are the kinds the module needs served before it runs.
var Kinds = []schema.GroupVersionKind{kruiseappsv1alpha1.GroupVersion.WithKind("ContainerRecreateRequest"),
	kruiseappsv1alpha1.GroupVersion.WithKind("NodeImage")}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "ContainerRecreateRequest"},
	{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "NodeImage"}}

// SetupWithManager registers the ContainerRecreateRequest controller and mutating webhook, and the NodeImage
// controller. The webhook reads pods past the cache: it copies the containers' current IDs and restart
// counts, which the node agent compares with the running containers.
func SetupWithManager(ctx context.Context, mgr manager.Manager, opts module.Options) error {
	r := &crrmanager.Reconciler{}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the ContainerRecreateRequest controller: %w", err)
	}
	if err := (&nodeimagemanager.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the NodeImage controller: %w", err)
	}
	if err := RegisterWebhook(mgr.GetWebhookServer(), mgr.GetAPIReader(), mgr.GetScheme()); err != nil {
		return err
	}
	var refusal error
	if !imageJobsEnabled(opts.Features) {
		refusal = errImagePullJobGateOff
	}
	return RegisterImageJobWebhooks(mgr.GetWebhookServer(), mgr.GetScheme(), refusal)
}

// imageJobsEnabled: the ImagePullJobGate, which the CloneSet's image pre-download turns on as upstream's gate
// dependencies do (it creates ImagePullJobs).
func imageJobsEnabled(g feature.Gates) bool {
	return g.Enabled(feature.ImagePullJobGate) || g.Enabled(feature.PreDownloadImageForInPlaceUpdate)
}

// errImagePullJobGateOff is upstream's refusal while the gate is off.
var errImagePullJobGateOff = fmt.Errorf("feature-gate %s is not enabled", feature.ImagePullJobGate)
