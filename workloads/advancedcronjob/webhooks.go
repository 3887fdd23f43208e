package advancedcronjob

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	acjadmission "github.com/flotilla-dev/flotilla/workloads/advancedcronjob/admission"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Paths of the AdvancedCronJob admission webhooks: upstream's.
const (
	MutateAdvancedCronJobPath   = "/mutate-apps-kruise-io-v1alpha1-advancedcronjob"
	ValidateAdvancedCronJobPath = "/validate-apps-kruise-io-v1alpha1-advancedcronjob"
)

// RegisterWebhooks serves the AdvancedCronJob defaulting and validating webhooks on srv; scheme must know the
// apps.kruise.io v1alpha1 kinds; opts says what the validation knows of the manager (whether it runs
// ImageListPullJobs). Call it once, before the server starts.
func RegisterWebhooks(srv webhook.Server, scheme *runtime.Scheme, opts acjadmission.Options) error {
	if srv == nil || scheme == nil {
		return errors.New("registering the AdvancedCronJob webhooks: server and scheme are required")
	}
	webhooks.Serve(srv, advancedCronJobHandlers(admission.NewDecoder(scheme), opts))
	return nil
}

func advancedCronJobHandlers(decoder admission.Decoder, opts acjadmission.Options) map[string]admission.Handler {
	validate := func(acj, old *kruiseappsv1alpha1.AdvancedCronJob) field.ErrorList {
		return acjadmission.Validate(acj, old, opts)
	}
	return map[string]admission.Handler{
		MutateAdvancedCronJobPath:   webhooks.Defaulting(decoder, "AdvancedCronJob", acjadmission.Default),
		ValidateAdvancedCronJobPath: webhooks.Validating(decoder, "AdvancedCronJob", validate),
	}
}
