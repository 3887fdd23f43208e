package broadcastjob

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	bcjadmission "github.com/flotilla-dev/flotilla/workloads/broadcastjob/admission"
)

// Paths of the BroadcastJob admission webhooks: upstream's.
const (
	MutateBroadcastJobPath   = "/mutate-apps-kruise-io-v1alpha1-broadcastjob"
	ValidateBroadcastJobPath = "/validate-apps-kruise-io-v1alpha1-broadcastjob"
)

// RegisterWebhooks serves the BroadcastJob defaulting and validating webhooks on srv; scheme must know the
// apps.kruise.io v1alpha1 kinds. Call it once, before the server starts.
func RegisterWebhooks(srv webhook.Server, scheme *runtime.Scheme) error {
	if srv == nil || scheme == nil {
		return errors.New("registering the BroadcastJob webhooks: server and scheme are required")
	}
	webhooks.Serve(srv, handlers(admission.NewDecoder(scheme)))
	return nil
}

func handlers(decoder admission.Decoder) map[string]admission.Handler {
	return map[string]admission.Handler{
		MutateBroadcastJobPath:   webhooks.Defaulting(decoder, "BroadcastJob", bcjadmission.Default),
		ValidateBroadcastJobPath: webhooks.Validating(decoder, "BroadcastJob", bcjadmission.Validate),
	}
}
