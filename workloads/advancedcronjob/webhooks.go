package advancedcronjob

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
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
// apps.kruise.io v1alpha1 kinds. Call it once, before the server starts.
func RegisterWebhooks(srv webhook.Server, scheme *runtime.Scheme) error {
	if srv == nil || scheme == nil {
		return errors.New("registering the AdvancedCronJob webhooks: server and scheme are required")
	}
	webhooks.Serve(srv, advancedCronJobHandlers(admission.NewDecoder(scheme)))
	return nil
}

func advancedCronJobHandlers(decoder admission.Decoder) map[string]admission.Handler {
	a := &advancedCronJobAdmission{decoder: decoder}
	return map[string]admission.Handler{
		MutateAdvancedCronJobPath:   webhooks.CreatesAndUpdates(a.defaults),
		ValidateAdvancedCronJobPath: webhooks.CreatesAndUpdates(a.validate),
	}
}

// advancedCronJobAdmission answers both AdvancedCronJob webhooks.
type advancedCronJobAdmission struct {
	decoder admission.Decoder
}

// defaults answers with the patch that applies upstream's defaults, merged into the request's object so
// that fields the typed object does not know are kept.
func (a *advancedCronJobAdmission) defaults(_ context.Context, req admission.Request) admission.Response {
	cur, old, err := a.decode(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	out := cur.DeepCopy()
	acjadmission.Default(out, old)
	if equality.Semantic.DeepEqual(cur, out) {
		return admission.Allowed("")
	}
	mutated, err := webhooks.MergeIntoRaw(req.Object.Raw, cur, out)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("building the AdvancedCronJob patch: %w", err))
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
}

// validate refuses an AdvancedCronJob that breaks upstream's rules, naming every faulty field.
func (a *advancedCronJobAdmission) validate(_ context.Context, req admission.Request) admission.Response {
	cur, old, err := a.decode(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if errs := acjadmission.Validate(cur, old); len(errs) > 0 {
		// 422 (Invalid), as for a schema error.
		return admission.Errored(http.StatusUnprocessableEntity, errs.ToAggregate())
	}
	return admission.Allowed("")
}

// decode reads the AdvancedCronJob and, on update, the stored one (nil on create).
func (a *advancedCronJobAdmission) decode(req admission.Request) (cur, old *kruiseappsv1alpha1.AdvancedCronJob, err error) {
	cur = &kruiseappsv1alpha1.AdvancedCronJob{}
	if err := a.decoder.DecodeRaw(req.Object, cur); err != nil {
		return nil, nil, fmt.Errorf("decoding the AdvancedCronJob: %w", err)
	}
	if req.Operation != admissionv1.Update {
		return cur, nil, nil
	}
	old = &kruiseappsv1alpha1.AdvancedCronJob{}
	if err := a.decoder.DecodeRaw(req.OldObject, old); err != nil {
		return nil, nil, fmt.Errorf("decoding the stored AdvancedCronJob: %w", err)
	}
	return cur, old, nil
}
