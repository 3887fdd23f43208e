package ephemeraljob

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
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
	a := &ephemeralJobAdmission{decoder: decoder}
	return map[string]admission.Handler{ValidateEphemeralJobPath: webhooks.CreatesAndUpdates(a.validate)}
}

// ephemeralJobAdmission answers the EphemeralJob webhook.
type ephemeralJobAdmission struct {
	decoder admission.Decoder
}

// validate refuses an EphemeralJob that breaks upstream's rules, naming every faulty field.
func (a *ephemeralJobAdmission) validate(_ context.Context, req admission.Request) admission.Response {
	cur, old, err := a.decode(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if errs := ejobadmission.Validate(cur, old); len(errs) > 0 {
		// 422 (Invalid), as for a schema error.
		return admission.Errored(http.StatusUnprocessableEntity, errs.ToAggregate())
	}
	return admission.Allowed("")
}

// decode reads the EphemeralJob and, on update, the stored one (nil on create).
func (a *ephemeralJobAdmission) decode(req admission.Request) (cur, old *kruiseappsv1alpha1.EphemeralJob, err error) {
	cur = &kruiseappsv1alpha1.EphemeralJob{}
	if err := a.decoder.DecodeRaw(req.Object, cur); err != nil {
		return nil, nil, fmt.Errorf("decoding the EphemeralJob: %w", err)
	}
	if req.Operation != admissionv1.Update {
		return cur, nil, nil
	}
	old = &kruiseappsv1alpha1.EphemeralJob{}
	if err := a.decoder.DecodeRaw(req.OldObject, old); err != nil {
		return nil, nil, fmt.Errorf("decoding the stored EphemeralJob: %w", err)
	}
	return cur, old, nil
}
