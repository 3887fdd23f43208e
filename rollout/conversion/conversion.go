// Package conversion serves the v1alpha1 <-> v1beta1 conversions of Rollout and BatchRelease to the
// manager's /convert endpoint.
package conversion

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Register adds the v1alpha1 <-> v1beta1 conversions of Rollout and BatchRelease to a registry.
func Register(scheme *runtime.Scheme, registry conversion.Registry) error {
	rollouts := conversion.NewHubSpokeConverter(&rolloutsv1beta1.Rollout{},
		conversion.NewSpokeConverter(&rolloutsv1alpha1.Rollout{}, rolloutToSpoke, rolloutToHub))
	batches := conversion.NewHubSpokeConverter(&rolloutsv1beta1.BatchRelease{},
		conversion.NewSpokeConverter(&rolloutsv1alpha1.BatchRelease{}, batchReleaseToSpoke, batchReleaseToHub))
	for kind, build := range map[string]func(*runtime.Scheme) (conversion.Converter, error){
		"Rollout": rollouts, "BatchRelease": batches,
	} {
		converter, err := build(scheme)
		if err != nil {
			return fmt.Errorf("building %s converter: %w", kind, err)
		}
		if err := registry.RegisterConverter(rolloutsv1beta1.GroupVersion.WithKind(kind).GroupKind(), converter); err != nil {
			return fmt.Errorf("registering %s converter: %w", kind, err)
		}
	}
	return nil
}

func rolloutToSpoke(_ context.Context, hub *rolloutsv1beta1.Rollout, spoke *rolloutsv1alpha1.Rollout) error {
	return rolloutsv1alpha1.ConvertRolloutFromV1beta1(hub, spoke)
}

func rolloutToHub(_ context.Context, spoke *rolloutsv1alpha1.Rollout, hub *rolloutsv1beta1.Rollout) error {
	return rolloutsv1alpha1.ConvertRolloutToV1beta1(spoke, hub)
}

func batchReleaseToSpoke(_ context.Context, hub *rolloutsv1beta1.BatchRelease, spoke *rolloutsv1alpha1.BatchRelease) error {
	return rolloutsv1alpha1.ConvertBatchReleaseFromV1beta1(hub, spoke)
}

func batchReleaseToHub(_ context.Context, spoke *rolloutsv1alpha1.BatchRelease, hub *rolloutsv1beta1.BatchRelease) error {
	return rolloutsv1alpha1.ConvertBatchReleaseToV1beta1(spoke, hub)
}
