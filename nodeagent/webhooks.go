package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	nodeadmission "github.com/flotilla-dev/flotilla/nodeagent/admission"
	"github.com/flotilla-dev/flotilla/webhooks"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// MutateContainerRecreateRequestPath is upstream's path of the ContainerRecreateRequest mutating webhook.
const MutateContainerRecreateRequestPath = "/mutate-apps-kruise-io-v1alpha1-containerrecreaterequest"

// ValidatePodProbeMarkerPath is upstream's path of the PodProbeMarker validating webhook.
const ValidatePodProbeMarkerPath = "/validate-apps-kruise-io-podprobemarker"

// Paths of the ImagePullJob and ImageListPullJob admission webhooks: upstream's.
const (
	MutateImagePullJobPath       = "/mutate-apps-kruise-io-v1alpha1-imagepulljob"
	ValidateImagePullJobPath     = "/validate-apps-kruise-io-v1alpha1-imagepulljob"
	MutateImageListPullJobPath   = "/mutate-apps-kruise-io-v1alpha1-imagelistpulljob"
	ValidateImageListPullJobPath = "/validate-apps-kruise-io-v1alpha1-imagelistpulljob"
)

// RegisterWebhook serves the ContainerRecreateRequest mutating webhook on srv: on create it defaults, checks
// the request against its pod and copies from the pod what the node agent needs; on update it refuses changes
// of the immutable fields. reader gets the pod; it should read past the cache, since the container IDs and
// restart counts copied are what the node agent compares the running containers with. scheme must know
// core/v1 and the apps.kruise.io v1alpha1 kinds. Call it once, before the server starts.
func RegisterWebhook(srv webhook.Server, reader client.Reader, scheme *runtime.Scheme) error {
	if srv == nil || reader == nil || scheme == nil {
		return errors.New("registering the ContainerRecreateRequest webhook: server, reader and scheme are required")
	}
	a := &crrAdmission{reader: reader, decoder: admission.NewDecoder(scheme)}
	srv.Register(MutateContainerRecreateRequestPath, &webhook.Admission{Handler: webhooks.CreatesAndUpdates(a.handle)})
	return nil
}

// RegisterImageJobWebhooks serves the ImagePullJob and ImageListPullJob defaulting and validating webhooks on
// srv; scheme must know the apps.kruise.io v1alpha1 kinds. A non-nil refusal (the ImagePullJobGate off) makes
// the validating webhooks refuse every create and every change of a spec with 403 and that message, as
// upstream's do, so that no job is accepted that nothing would act on; updates of the metadata alone pass, so
// that a job left from before the gate went off can lose its finalizer and go. Call it once, before the
// server starts.
func RegisterImageJobWebhooks(srv webhook.Server, scheme *runtime.Scheme, refusal error) error {
	if srv == nil || scheme == nil {
		return errors.New("registering the ImagePullJob webhooks: server and scheme are required")
	}
	webhooks.Serve(srv, imageJobHandlers(admission.NewDecoder(scheme), refusal))
	return nil
}

func imageJobHandlers(decoder admission.Decoder, refusal error) map[string]admission.Handler {
	h := map[string]admission.Handler{
		MutateImagePullJobPath:       webhooks.Defaulting(decoder, "ImagePullJob", nodeadmission.DefaultImagePullJob),
		ValidateImagePullJobPath:     webhooks.Validating(decoder, "ImagePullJob", nodeadmission.ValidateImagePullJob),
		MutateImageListPullJobPath:   webhooks.Defaulting(decoder, "ImageListPullJob", nodeadmission.DefaultImageListPullJob),
		ValidateImageListPullJobPath: webhooks.Validating(decoder, "ImageListPullJob", nodeadmission.ValidateImageListPullJob),
	}
	if refusal != nil {
		refuse := refusing(refusal)
		h[ValidateImagePullJobPath], h[ValidateImageListPullJobPath] = refuse, refuse
	}
	return h
}

// refusing answers a validating webhook of a kind whose feature gate is off: every create and every change of
// the spec is refused with 403 and refusal's message, as upstream's do, so that nothing is accepted that no
// controller would act on; updates of the metadata alone pass, so that an object left from before the gate
// went off can lose its finalizer and go.
func refusing(refusal error) admission.Handler {
	return webhooks.CreatesAndUpdates(func(_ context.Context, req admission.Request) admission.Response {
		if req.Operation == admissionv1.Update && sameSpec(req.Object.Raw, req.OldObject.Raw) {
			return admission.Allowed("")
		}
		return admission.Errored(http.StatusForbidden, refusal)
	})
}

// RegisterPodProbeMarkerWebhook serves the PodProbeMarker validating webhook on srv; scheme must know the
// apps.kruise.io v1alpha1 kinds. A non-nil refusal (the PodProbeMarkerGate off) makes it refuse every create
// and every change of a spec with 403 and that message, as upstream's does; updates of the metadata alone
// pass, so that a marker left from before the gate went off can lose its finalizer and go. Call it once,
// before the server starts.
func RegisterPodProbeMarkerWebhook(srv webhook.Server, scheme *runtime.Scheme, refusal error) error {
	if srv == nil || scheme == nil {
		return errors.New("registering the PodProbeMarker webhook: server and scheme are required")
	}
	h := webhooks.Validating(admission.NewDecoder(scheme), "PodProbeMarker", nodeadmission.ValidatePodProbeMarker)
	if refusal != nil {
		h = refusing(refusal)
	}
	webhooks.Serve(srv, map[string]admission.Handler{ValidatePodProbeMarkerPath: h})
	return nil
}

// sameSpec reports whether two JSON objects have equal specs; an undecodable one never does.
func sameSpec(a, b []byte) bool {
	var objA, objB struct {
		Spec any `json:"spec"`
	}
	if json.Unmarshal(a, &objA) != nil || json.Unmarshal(b, &objB) != nil {
		return false
	}
	return reflect.DeepEqual(objA.Spec, objB.Spec)
}

// crrAdmission answers the ContainerRecreateRequest webhook.
type crrAdmission struct {
	reader  client.Reader
	decoder admission.Decoder
}

func (a *crrAdmission) handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation == admissionv1.Update {
		return a.update(req)
	}
	return a.create(ctx, req)
}

// create answers with the patch that defaults the request and fills it from its pod, or refuses it naming
// every faulty field.
func (a *crrAdmission) create(ctx context.Context, req admission.Request) admission.Response {
	cur, err := a.decode(req.Object, req.Namespace)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	out := cur.DeepCopy()
	nodeadmission.Default(out)
	pod, err := nodeadmission.PodOf(ctx, a.reader, out)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if errs := nodeadmission.ValidateCreate(out, pod); len(errs) > 0 {
		return admission.Errored(http.StatusUnprocessableEntity, errs.ToAggregate())
	}
	nodeadmission.FillFromPod(out, pod)
	return crrPatch(req.Object.Raw, cur, out)
}

// update refuses changes of the fields fixed at creation.
func (a *crrAdmission) update(req admission.Request) admission.Response {
	cur, err := a.decode(req.Object, req.Namespace)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	old, err := a.decode(req.OldObject, req.Namespace)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("stored: %w", err))
	}
	if errs := nodeadmission.ValidateUpdate(cur, old); len(errs) > 0 {
		return admission.Errored(http.StatusUnprocessableEntity, errs.ToAggregate())
	}
	return admission.Allowed("")
}

// decode reads a request; the namespace comes from the admission request when the body omits it.
func (a *crrAdmission) decode(raw runtime.RawExtension, namespace string) (*kruiseappsv1alpha1.ContainerRecreateRequest, error) {
	crr := &kruiseappsv1alpha1.ContainerRecreateRequest{}
	if err := a.decoder.DecodeRaw(raw, crr); err != nil {
		return nil, fmt.Errorf("decoding the ContainerRecreateRequest: %w", err)
	}
	if crr.Namespace == "" {
		crr.Namespace = namespace
	}
	return crr, nil
}

// crrPatch merges the changes into the request's object, keeping fields the typed object does not know.
func crrPatch(raw []byte, cur, out *kruiseappsv1alpha1.ContainerRecreateRequest) admission.Response {
	if equality.Semantic.DeepEqual(cur, out) {
		return admission.Allowed("")
	}
	return webhooks.PatchOrReplace(raw, cur, out)
}
