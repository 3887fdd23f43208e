package ephemeraljob

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	ejobadmission "github.com/flotilla-dev/flotilla/workloads/ephemeraljob/admission"
)

// ValidateEphemeralJobPath is upstream's path of the EphemeralJob validating webhook. Upstream has no
// defaulting webhook for the kind (the controller applies the defaults), and neither has Flotilla.
const ValidateEphemeralJobPath = "/validate-apps-kruise-io-v1alpha1-ephemeraljob"

// RegisterWebhooks serves the EphemeralJob validating webhook on srv; scheme must know the apps.kruise.io
// v1alpha1 kinds. Call it once, before the server starts.
func RegisterWebhooks(srv webhook.Server, scheme *runtime.Scheme) error {
	if srv == nil || scheme == nil {
		return errors.New("registering the EphemeralJob webhooks: server and scheme are required")
	}
	webhooks.Serve(srv, ephemeralJobHandlers(admission.NewDecoder(scheme)))
	return nil
}

func ephemeralJobHandlers(decoder admission.Decoder) map[string]admission.Handler {
	return map[string]admission.Handler{ValidateEphemeralJobPath: webhooks.Validating(decoder, "EphemeralJob", ejobadmission.Validate)}
}
