// Package conversion serves the v1alpha1 <-> v1beta1 conversions of Rollout and BatchRelease to the
// manager's /convert endpoint.
package conversion

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/webhooks/convert"
)

// registrations are the kinds' conversions, both stored as v1beta1.
var registrations = []func(*runtime.Scheme, conversion.Registry) error{
	convert.HubSpoke(&rolloutsv1beta1.Rollout{}, &rolloutsv1alpha1.Rollout{},
		rolloutsv1alpha1.ConvertRolloutFromV1beta1, rolloutsv1alpha1.ConvertRolloutToV1beta1),
	convert.HubSpoke(&rolloutsv1beta1.BatchRelease{}, &rolloutsv1alpha1.BatchRelease{},
		rolloutsv1alpha1.ConvertBatchReleaseFromV1beta1, rolloutsv1alpha1.ConvertBatchReleaseToV1beta1),
}

// Register adds the v1alpha1 <-> v1beta1 conversions of Rollout and BatchRelease to a registry.
func Register(scheme *runtime.Scheme, registry conversion.Registry) error {
	for _, register := range registrations {
		if err := register(scheme, registry); err != nil {
			return err
		}
	}
	return nil
}
