// Package convert builds the modules' registrations of their CRD conversions for the manager's /convert.
// (A package of its own: the webhooks package's tests register the engine's conversions.)
package convert

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// HubSpoke is a module's Convert for a kind stored as hub and served as spoke too: it adds to the
// manager's registry the conversion that to and from do, for /convert to serve.
func HubSpoke[H, S client.Object](hub H, spoke S, to func(H, S) error, from func(S, H) error) func(*runtime.Scheme, conversion.Registry) error {
	return func(scheme *runtime.Scheme, registry conversion.Registry) error {
		gvk, err := apiutil.GVKForObject(hub, scheme)
		if err != nil {
			return err
		}
		build := conversion.NewHubSpokeConverter(hub, conversion.NewSpokeConverter(spoke,
			func(_ context.Context, h H, s S) error { return to(h, s) },
			func(_ context.Context, s S, h H) error { return from(s, h) }))
		converter, err := build(scheme)
		if err != nil {
			return fmt.Errorf("building the %s converter: %w", gvk.Kind, err)
		}
		return registry.RegisterConverter(gvk.GroupKind(), converter)
	}
}
