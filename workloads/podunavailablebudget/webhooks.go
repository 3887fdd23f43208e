package podunavailablebudget

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
	pubadmission "github.com/flotilla-dev/flotilla/workloads/podunavailablebudget/admission"
)

// ValidatePodUnavailableBudgetPath is the path of the PodUnavailableBudget validating webhook: upstream's. The
// chart's entry for it is named vpodunavailablebudget.kb.io, as upstream's.
const ValidatePodUnavailableBudgetPath = "/validate-policy-kruise-io-podunavailablebudget"

// RegisterWebhooks serves the PodUnavailableBudget validating webhook on srv; budgets reads the other budgets
// of a namespace (the manager's cache) and scheme must know policy.kruise.io/v1alpha1. A non-nil refusal (both
// gates off) refuses every create and update with 400 and that message instead, as upstream's webhook does.
// Call it once, before the server starts.
func RegisterWebhooks(srv webhook.Server, budgets client.Reader, scheme *runtime.Scheme, refusal error) error {
	if srv == nil || budgets == nil || scheme == nil {
		return errors.New("registering the PodUnavailableBudget webhook: server, reader and scheme are required")
	}
	webhooks.Serve(srv, handlers(admission.NewDecoder(scheme), budgets, refusal))
	return nil
}

func handlers(decoder admission.Decoder, budgets client.Reader, refusal error) map[string]admission.Handler {
	h := webhooks.CreatesAndUpdates(func(ctx context.Context, req admission.Request) admission.Response {
		return validate(ctx, decoder, budgets, req)
	})
	if refusal != nil {
		h = webhooks.CreatesAndUpdates(func(context.Context, admission.Request) admission.Response {
			return admission.Errored(http.StatusBadRequest, refusal)
		})
	}
	return map[string]admission.Handler{ValidatePodUnavailableBudgetPath: h}
}

// validate refuses with 422 (Invalid, as for a schema error) naming every field the rules find wrong, the
// conflict with another budget of the namespace included.
func validate(ctx context.Context, decoder admission.Decoder, budgets client.Reader, req admission.Request) admission.Response {
	cur, old, err := webhooks.Decode[kruisepolicyv1alpha1.PodUnavailableBudget](decoder, req, "PodUnavailableBudget")
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	errs := pubadmission.Validate(cur, old)
	others := &kruisepolicyv1alpha1.PodUnavailableBudgetList{}
	if err := budgets.List(ctx, others, client.InNamespace(req.Namespace)); err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("listing the PodUnavailableBudgets of namespace %s: %w", req.Namespace, err))
	}
	if errs = append(errs, pubadmission.Conflicts(cur, others.Items)...); len(errs) > 0 {
		return admission.Errored(http.StatusUnprocessableEntity, errs.ToAggregate())
	}
	return admission.Allowed("")
}
