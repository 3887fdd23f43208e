package advancedcronjob

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	acjadmission "github.com/flotilla-dev/flotilla/workloads/advancedcronjob/admission"
)

// Paths of the AdvancedCronJob admission webhooks: upstream's.
const (
	MutateAdvancedCronJobPath   = "/mutate-apps-kruise-io-v1alpha1-advancedcronjob"
	ValidateAdvancedCronJobPath = "/validate-apps-kruise-io-v1alpha1-advancedcronjob"
)

// RegisterWebhooks serves the AdvancedCronJob defaulting and validating webhooks on srv; scheme must know the
// apps.kruise.io v1alpha1 kinds. Call it once, before the server starts.
func RegisterWebhooks(srv webhook.Server, scheme *runtime.Scheme) error {
	if srv == nil || scheme == nil {
		return errors.New("registering the AdvancedCronJob webhooks: server and scheme are required")
	}
	webhooks.Serve(srv, advancedCronJobHandlers(admission.NewDecoder(scheme)))
	return nil
}

func advancedCronJobHandlers(decoder admission.Decoder) map[string]admission.Handler {
	return map[string]admission.Handler{
		MutateAdvancedCronJobPath:   webhooks.Defaulting(decoder, "AdvancedCronJob", acjadmission.Default),
		ValidateAdvancedCronJobPath: webhooks.Validating(decoder, "AdvancedCronJob", acjadmission.Validate),
	}
}
