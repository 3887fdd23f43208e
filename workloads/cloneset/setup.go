// Package cloneset is Flotilla's CloneSet module: the CloneSet controller, its admission webhooks, the pod
// readiness machinery its pods rely on, and the CloneSet controls the Rollout engine releases CloneSets
// with.
package cloneset

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/rollout/module"
	"github.com/flotilla-dev/flotilla/webhooks"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/controller"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
)

// Kinds are the kinds the module needs served before it runs.
var Kinds = []schema.GroupVersionKind{kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet")}

// Kind is the group and kind the module registers its Rollout controls under.
var Kind = schema.GroupKind{Group: kruiseappsv1alpha1.GroupVersion.Group, Kind: "CloneSet"}

// SetupWithManager registers the CloneSet controller, the pod readiness controller, the CloneSet and pod
// admission webhooks, and the CloneSet controls of the Rollout engine.
func SetupWithManager(_ context.Context, mgr manager.Manager, opts module.Options) error {
	if err := registerControls(opts.Controls); err != nil {
		return err
	}
	if err := (&controller.Reconciler{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the CloneSet controller: %w", err)
	}
	if err := podreadiness.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the pod readiness controller: %w", err)
	}
	srv := mgr.GetWebhookServer()
	if err := webhooks.RegisterCloneSetWebhooks(srv, mgr.GetClient(), mgr.GetScheme()); err != nil {
		return err
	}
	// The pod webhook injects a gate the pod readiness controller above initialises: both or neither.
	return webhooks.RegisterPodWebhook(srv, mgr.GetScheme())
}

func registerControls(r *control.Registry) error {
	if r == nil {
		return nil
	}
	return errors.Join(
		r.Register(Kind, rolloutsv1beta1.PartitionRollingStyle, control.NewCloneSetPartition),
		r.Register(Kind, rolloutsv1beta1.BlueGreenRollingStyle, control.NewCloneSetBlueGreen),
	)
}
