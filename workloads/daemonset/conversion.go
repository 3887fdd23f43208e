package daemonset

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// ConversionCRDs: Advanced DaemonSets are stored as v1alpha1, which upstream OpenKruise before 1.9, its
// kubectl-kruise and the Rollout engine read, and served as v1beta1 too, converted by the manager.
var ConversionCRDs = []string{"daemonsets.apps.kruise.io"}

// Convert adds the v1alpha1 <-> v1beta1 DaemonSet conversion to the manager's registry.
func Convert(scheme *runtime.Scheme, registry conversion.Registry) error {
	build := conversion.NewHubSpokeConverter(&kruiseappsv1alpha1.DaemonSet{},
		conversion.NewSpokeConverter(&kruiseappsv1beta1.DaemonSet{}, toV1beta1, fromV1beta1))
	converter, err := build(scheme)
	if err != nil {
		return fmt.Errorf("building the DaemonSet converter: %w", err)
	}
	return registry.RegisterConverter(kruiseappsv1alpha1.GroupVersion.WithKind("DaemonSet").GroupKind(), converter)
}

func toV1beta1(_ context.Context, hub *kruiseappsv1alpha1.DaemonSet, spoke *kruiseappsv1beta1.DaemonSet) error {
	return kruiseappsv1alpha1.ConvertDaemonSetToV1beta1(hub, spoke)
}

func fromV1beta1(_ context.Context, spoke *kruiseappsv1beta1.DaemonSet, hub *kruiseappsv1alpha1.DaemonSet) error {
	return kruiseappsv1alpha1.ConvertDaemonSetFromV1beta1(spoke, hub)
}
