// Package nodeagent is Flotilla's node agent module. The agent itself (cmd/nodeagent) runs on every node
// and recreates containers through CRI; this package is the manager's side of it: the ContainerRecreateRequest
// webhook (defaults, validation, what the agent needs copied from the pod) and the controller that keeps
// requests in step with their pods and ends them.
package nodeagent

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/crrmanager"
	"github.com/flotilla-dev/flotilla/rollout/module"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Kinds are the kinds the module needs served before it runs.
var Kinds = []schema.GroupVersionKind{kruiseappsv1alpha1.GroupVersion.WithKind("ContainerRecreateRequest")}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "ContainerRecreateRequest"}}

// SetupWithManager registers the ContainerRecreateRequest controller and mutating webhook. The webhook reads
// pods past the cache: it copies the containers' current IDs and restart counts, which the node agent
// compares with the running containers.
func SetupWithManager(ctx context.Context, mgr manager.Manager, _ module.Options) error {
	r := &crrmanager.Reconciler{}
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the ContainerRecreateRequest controller: %w", err)
	}
	return RegisterWebhook(mgr.GetWebhookServer(), mgr.GetAPIReader(), mgr.GetScheme())
}
