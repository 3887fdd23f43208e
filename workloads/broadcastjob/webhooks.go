package broadcastjob

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
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
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
	a := &jobAdmission{decoder: decoder}
	return map[string]admission.Handler{
		MutateBroadcastJobPath:   webhooks.CreatesAndUpdates(a.defaults),
		ValidateBroadcastJobPath: webhooks.CreatesAndUpdates(a.validate),
	}
}

// jobAdmission answers both BroadcastJob webhooks.
type jobAdmission struct {
	decoder admission.Decoder
}

// defaults answers with the patch that applies upstream's defaults, merged into the request's object so that
// fields the typed object does not know are kept.
func (a *jobAdmission) defaults(_ context.Context, req admission.Request) admission.Response {
	cur, old, err := a.decode(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	out := cur.DeepCopy()
	bcjadmission.Default(out, old)
	if equality.Semantic.DeepEqual(cur, out) {
		return admission.Allowed("")
	}
	mutated, err := webhooks.MergeIntoRaw(req.Object.Raw, cur, out)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("building the BroadcastJob patch: %w", err))
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
}

// validate refuses a BroadcastJob that breaks upstream's rules, naming every faulty field.
func (a *jobAdmission) validate(_ context.Context, req admission.Request) admission.Response {
	cur, old, err := a.decode(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if errs := bcjadmission.Validate(cur, old); len(errs) > 0 {
		// 422 (Invalid), as for a schema error.
		return admission.Errored(http.StatusUnprocessableEntity, errs.ToAggregate())
	}
	return admission.Allowed("")
}

// decode reads the job and, on update, the stored one (nil on create).
func (a *jobAdmission) decode(req admission.Request) (cur, old *kruiseappsv1alpha1.BroadcastJob, err error) {
	cur = &kruiseappsv1alpha1.BroadcastJob{}
	if err := a.decoder.DecodeRaw(req.Object, cur); err != nil {
		return nil, nil, fmt.Errorf("decoding the BroadcastJob: %w", err)
	}
	if req.Operation != admissionv1.Update {
		return cur, nil, nil
	}
	old = &kruiseappsv1alpha1.BroadcastJob{}
	if err := a.decoder.DecodeRaw(req.OldObject, old); err != nil {
		return nil, nil, fmt.Errorf("decoding the stored BroadcastJob: %w", err)
	}
	return cur, old, nil
}
