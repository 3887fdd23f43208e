// Package persistentpodstate is Flotilla's PersistentPodState module: a PersistentPodState records where the
// pods of a StatefulSet (native or Advanced) ran, by node topology, and a pod created again under a recorded
// name gets node affinity to the same topology from the pod webhook. StatefulSets annotated
// kruise.io/auto-generate-persistent-pod-state get their PersistentPodState generated.
package persistentpodstate

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/persistentpodstate/internal/controller"
	"github.com/flotilla-dev/flotilla/workloads/persistentpodstate/internal/podrouting"
)

// Kinds are the kinds the module needs served before it runs: its own, and the Advanced StatefulSet it
// watches beside the native one.
var Kinds = []schema.GroupVersionKind{kruiseappsv1alpha1.GroupVersion.WithKind("PersistentPodState"),
	kruiseappsv1beta1.GroupVersion.WithKind("StatefulSet")}

// Reconciles are the kinds the module runs controllers for.
var Reconciles = []schema.GroupKind{{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "PersistentPodState"}}

// SetupWithManager registers the recording controller, the generating controllers of both StatefulSet kinds,
// the route that sends StatefulSet pods to the pod webhook while PersistentPodStates exist, the
// validating webhook and the module's part of the pod webhook.
func SetupWithManager(_ context.Context, mgr manager.Manager, opts module.Options) error {
	if err := controller.IndexTargets(mgr); err != nil {
		return err
	}
	recorder := &controller.Recorder{StartOrdinal: opts.Features.Enabled(feature.StatefulSetStartOrdinal)}
	if err := recorder.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PersistentPodState controller: %w", err)
	}
	for _, advanced := range []bool{false, true} {
		if err := (&controller.Generator{Advanced: advanced}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the PersistentPodState generator: %w", err)
		}
	}
	if opts.PodRoutes != nil {
		opts.PodRoutes.Add(podrouting.Route())
	}
	return RegisterWebhooks(mgr.GetWebhookServer(), mgr.GetClient(), mgr.GetScheme(), opts.PodMutations)
}
