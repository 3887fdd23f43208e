package statefulset

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	statefulsetadmission "github.com/flotilla-dev/flotilla/workloads/statefulset/admission"
)

// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch

// Paths of the Advanced StatefulSet admission webhooks, upstream's. Both serve v1alpha1 and v1beta1.
const (
	MutateStatefulSetPath   = "/mutate-apps-kruise-io-statefulset"
	ValidateStatefulSetPath = "/validate-apps-kruise-io-statefulset"
)

// RegisterWebhooks serves the defaulting and validating webhooks on srv. reader lists storage classes (a
// cache is fine) to check volume expansion; scheme must know both apps.kruise.io versions. Call it once,
// before the server starts.
func RegisterWebhooks(srv webhook.Server, reader client.Reader, scheme *runtime.Scheme, opts statefulsetadmission.Options) error {
	if srv == nil || reader == nil || scheme == nil {
		return errors.New("registering the Advanced StatefulSet webhooks: server, reader and scheme are required")
	}
	webhooks.Serve(srv, handlers(reader, admission.NewDecoder(scheme), opts))
	return nil
}

func handlers(reader client.Reader, decoder admission.Decoder, opts statefulsetadmission.Options) map[string]admission.Handler {
	a := &setAdmission{reader: reader, decoder: decoder, opts: opts}
	return map[string]admission.Handler{
		MutateStatefulSetPath:   webhooks.CreatesAndUpdates(a.defaults),
		ValidateStatefulSetPath: webhooks.CreatesAndUpdates(a.validate),
	}
}

// setAdmission answers both webhooks.
type setAdmission struct {
	reader  client.Reader
	decoder admission.Decoder
	opts    statefulsetadmission.Options
}

// defaults answers with the patch that applies upstream's defaults, in the request's version: a v1alpha1
// object gets only the defaults of the fields v1alpha1 has.
func (a *setAdmission) defaults(_ context.Context, req admission.Request) admission.Response {
	cur, old, err := a.decode(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	out := cur.DeepCopy()
	statefulsetadmission.DefaultUpdate(out, old, a.opts)
	if equality.Semantic.DeepEqual(cur, out) {
		return admission.Allowed("")
	}
	resp, err := patchDefaults(req, cur, out)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("building the StatefulSet patch: %w", err))
	}
	return resp
}

// patchDefaults merges the defaults into the request's object in its version, keeping fields the typed
// objects do not know.
func patchDefaults(req admission.Request, cur, out *kruiseappsv1beta1.StatefulSet) (admission.Response, error) {
	if !isV1alpha1(req) {
		return webhooks.PatchResponse(req.Object.Raw, cur, out)
	}
	curA, err := statefulsetadmission.ToV1alpha1(cur)
	if err != nil {
		return admission.Response{}, err
	}
	outA, err := statefulsetadmission.ToV1alpha1(out)
	if err != nil {
		return admission.Response{}, err
	}
	return webhooks.PatchResponse(req.Object.Raw, curA, outA)
}

// validate refuses a set that breaks upstream's rules, naming every faulty field.
func (a *setAdmission) validate(ctx context.Context, req admission.Request) admission.Response {
	cur, old, err := a.decode(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	errs := statefulsetadmission.Validate(cur, old)
	expansion, err := a.validateExpansion(ctx, cur, old)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if errs = append(errs, expansion...); len(errs) > 0 {
		// Upstream answers 422 (Invalid), so clients see the same status as for a schema error.
		return admission.Errored(http.StatusUnprocessableEntity, errs.ToAggregate())
	}
	return admission.Allowed("")
}

// validateExpansion checks grown claim templates against their storage classes; it lists them only then.
func (a *setAdmission) validateExpansion(ctx context.Context, cur, old *kruiseappsv1beta1.StatefulSet) (field.ErrorList, error) {
	if !grows(cur, old) {
		return nil, nil
	}
	classes := &storagev1.StorageClassList{}
	if err := a.reader.List(ctx, classes); err != nil {
		return nil, fmt.Errorf("listing storage classes: %w", err)
	}
	return statefulsetadmission.ValidateExpansion(cur, old, classes.Items), nil
}

// grows reports whether an update asks for more storage in a claim template claims follow.
func grows(cur, old *kruiseappsv1beta1.StatefulSet) bool {
	if old == nil || cur.Spec.VolumeClaimUpdateStrategy.Type != kruiseappsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType {
		return false
	}
	return !equality.Semantic.DeepEqual(cur.Spec.VolumeClaimTemplates, old.Spec.VolumeClaimTemplates)
}

func isV1alpha1(req admission.Request) bool {
	return req.Kind.Version == kruiseappsv1alpha1.GroupVersion.Version
}

// decode reads the set and, on update, the stored one (nil on create), as v1beta1 whatever the request's
// version. The namespace comes from the request when the body omits it.
func (a *setAdmission) decode(req admission.Request) (cur, old *kruiseappsv1beta1.StatefulSet, err error) {
	if cur, err = a.decodeRaw(req, req.Object); err != nil {
		return nil, nil, fmt.Errorf("decoding the StatefulSet: %w", err)
	}
	if cur.Namespace == "" {
		cur.Namespace = req.Namespace
	}
	if req.Operation != admissionv1.Update {
		return cur, nil, nil
	}
	if old, err = a.decodeRaw(req, req.OldObject); err != nil {
		return nil, nil, fmt.Errorf("decoding the stored StatefulSet: %w", err)
	}
	return cur, old, nil
}

func (a *setAdmission) decodeRaw(req admission.Request, raw runtime.RawExtension) (*kruiseappsv1beta1.StatefulSet, error) {
	if !isV1alpha1(req) {
		set := &kruiseappsv1beta1.StatefulSet{}
		return set, a.decoder.DecodeRaw(raw, set)
	}
	alpha := &kruiseappsv1alpha1.StatefulSet{}
	if err := a.decoder.DecodeRaw(raw, alpha); err != nil {
		return nil, err
	}
	return statefulsetadmission.FromV1alpha1(alpha)
}
