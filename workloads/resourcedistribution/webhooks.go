package resourcedistribution

import (
	"context"
	"errors"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	rdadmission "github.com/flotilla-dev/flotilla/workloads/resourcedistribution/admission"
)

// ValidateResourceDistributionPath is the path of the ResourceDistribution validating webhook: upstream's.
// The chart's entry for it is named vresourcedistribution.kb.io, as upstream's.
const ValidateResourceDistributionPath = "/validate-apps-kruise-io-v1alpha1-resourcedistribution"

// RegisterWebhooks serves the ResourceDistribution validating webhook on srv; scheme must know the
// apps.kruise.io v1alpha1 kinds. A non-nil refusal (the feature gate off) refuses every create and update
// with 403 and that message instead, as upstream's webhook does. Call it once, before the server starts.
func RegisterWebhooks(srv webhook.Server, scheme *runtime.Scheme, refusal error) error {
	if srv == nil || scheme == nil {
		return errors.New("registering the ResourceDistribution webhook: server and scheme are required")
	}
	webhooks.Serve(srv, handlers(admission.NewDecoder(scheme), refusal))
	return nil
}

func handlers(decoder admission.Decoder, refusal error) map[string]admission.Handler {
	h := webhooks.Validating(decoder, "ResourceDistribution", rdadmission.Validate)
	if refusal != nil {
		h = webhooks.CreatesAndUpdates(func(context.Context, admission.Request) admission.Response {
			return admission.Errored(http.StatusForbidden, refusal)
		})
	}
	return map[string]admission.Handler{ValidateResourceDistributionPath: h}
}
