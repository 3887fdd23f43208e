package uniteddeployment

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	udadmission "github.com/flotilla-dev/flotilla/workloads/uniteddeployment/admission"
)

// Paths of the UnitedDeployment admission webhooks: upstream's. The chart's entries for them are named
// muniteddeployment.kb.io and vuniteddeployment.kb.io.
const (
	MutateUnitedDeploymentPath   = "/mutate-apps-kruise-io-v1alpha1-uniteddeployment"
	ValidateUnitedDeploymentPath = "/validate-apps-kruise-io-v1alpha1-uniteddeployment"
)

// RegisterWebhooks serves the UnitedDeployment defaulting and validating webhooks on srv; scheme must know
// the apps.kruise.io v1alpha1 kinds. Call it once, before the server starts.
func RegisterWebhooks(srv webhook.Server, scheme *runtime.Scheme) error {
	if srv == nil || scheme == nil {
		return errors.New("registering the UnitedDeployment webhooks: server and scheme are required")
	}
	webhooks.Serve(srv, handlers(admission.NewDecoder(scheme)))
	return nil
}

func handlers(decoder admission.Decoder) map[string]admission.Handler {
	return map[string]admission.Handler{
		MutateUnitedDeploymentPath:   webhooks.Defaulting(decoder, "UnitedDeployment", udadmission.Default),
		ValidateUnitedDeploymentPath: webhooks.Validating(decoder, "UnitedDeployment", udadmission.Validate),
	}
}
