package daemonset

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
	daemonsetadmission "github.com/flotilla-dev/flotilla/workloads/daemonset/admission"
)

// Paths of the Advanced DaemonSet admission webhooks. The validating path is upstream's; upstream's mutating
// path already serves the Rollout engine's freezing webhook (rollout.MutateAdvancedDaemonSetPath), so
// defaulting has its own.
const (
	DefaultDaemonSetPath  = "/default-apps-kruise-io-v1alpha1-daemonset"
	ValidateDaemonSetPath = "/validate-apps-kruise-io-v1alpha1-daemonset"
)

// RegisterWebhooks serves the DaemonSet defaulting and validating webhooks on srv; scheme must know the
// apps.kruise.io v1alpha1 kinds. Call it once, before the server starts.
func RegisterWebhooks(srv webhook.Server, scheme *runtime.Scheme) error {
	if srv == nil || scheme == nil {
		return errors.New("registering the DaemonSet webhooks: server and scheme are required")
	}
	webhooks.Serve(srv, daemonSetHandlers(admission.NewDecoder(scheme)))
	return nil
}

func daemonSetHandlers(decoder admission.Decoder) map[string]admission.Handler {
	a := &daemonSetAdmission{decoder: decoder}
	return map[string]admission.Handler{
		DefaultDaemonSetPath:  webhooks.CreatesAndUpdates(a.defaults),
		ValidateDaemonSetPath: webhooks.CreatesAndUpdates(a.validate),
	}
}

// daemonSetAdmission answers both DaemonSet webhooks.
type daemonSetAdmission struct {
	decoder admission.Decoder
}

// defaults answers with the patch that applies upstream's defaults, merged into the request's object so
// that fields the typed object does not know are kept.
func (a *daemonSetAdmission) defaults(_ context.Context, req admission.Request) admission.Response {
	cur, _, err := a.decode(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	out := cur.DeepCopy()
	daemonsetadmission.Default(out)
	if equality.Semantic.DeepEqual(cur, out) {
		return admission.Allowed("")
	}
	mutated, err := webhooks.MergeIntoRaw(req.Object.Raw, cur, out)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("building the DaemonSet patch: %w", err))
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
}

// validate refuses a DaemonSet that breaks upstream's rules, naming every faulty field.
func (a *daemonSetAdmission) validate(_ context.Context, req admission.Request) admission.Response {
	cur, old, err := a.decode(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if errs := daemonsetadmission.Validate(cur, old); len(errs) > 0 {
		// 422 (Invalid), as for a schema error.
		return admission.Errored(http.StatusUnprocessableEntity, errs.ToAggregate())
	}
	return admission.Allowed("")
}

// decode reads the DaemonSet and, on update, the stored one (nil on create).
func (a *daemonSetAdmission) decode(req admission.Request) (cur, old *kruiseappsv1alpha1.DaemonSet, err error) {
	cur = &kruiseappsv1alpha1.DaemonSet{}
	if err := a.decoder.DecodeRaw(req.Object, cur); err != nil {
		return nil, nil, fmt.Errorf("decoding the DaemonSet: %w", err)
	}
	if req.Operation != admissionv1.Update {
		return cur, nil, nil
	}
	old = &kruiseappsv1alpha1.DaemonSet{}
	if err := a.decoder.DecodeRaw(req.OldObject, old); err != nil {
		return nil, nil, fmt.Errorf("decoding the stored DaemonSet: %w", err)
	}
	return cur, old, nil
}
