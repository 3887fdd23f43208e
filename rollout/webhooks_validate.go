package rollout

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// rolloutValidator answers the Rollout validating webhook for both served versions.
type rolloutValidator struct {
	reader  client.Reader
	decoder admission.Decoder
	opts    rolloutadmission.Options
}

// Handle validates Rollout creates and updates; other operations and subresources pass.
func (v *rolloutValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.SubResource != "" || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return admission.Allowed("")
	}
	validate := v.validateV1beta1
	if req.Kind.Version == rolloutsv1alpha1.GroupVersion.Version {
		validate = v.validateV1alpha1
	}
	errs, warnings, err := validate(ctx, req)
	if err != nil {
		return admission.Errored(errorCode(err), err)
	}
	if len(errs) > 0 {
		return admission.Denied(errs.ToAggregate().Error()).WithWarnings(warnings...)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

func (v *rolloutValidator) validateV1beta1(ctx context.Context, req admission.Request) (field.ErrorList, []string, error) {
	r := &rolloutsv1beta1.Rollout{}
	if err := v.decode(req, req.Object, r); err != nil {
		return nil, nil, err
	}
	others, err := v.others(ctx, r.Namespace, r.Spec.WorkloadRef.Kind, r.Spec.WorkloadRef.Name)
	if err != nil {
		return nil, nil, err
	}
	warnings := rolloutadmission.Warnings(r)
	if req.Operation == admissionv1.Create {
		return rolloutadmission.ValidateRollout(r, others, v.opts), warnings, nil
	}
	old := &rolloutsv1beta1.Rollout{}
	if err := v.decode(req, req.OldObject, old); err != nil {
		return nil, nil, err
	}
	return rolloutadmission.ValidateRolloutUpdate(old, r, others, v.opts), warnings, nil
}

func (v *rolloutValidator) validateV1alpha1(ctx context.Context, req admission.Request) (field.ErrorList, []string, error) {
	r := &rolloutsv1alpha1.Rollout{}
	if err := v.decode(req, req.Object, r); err != nil {
		return nil, nil, err
	}
	var others []rolloutsv1beta1.Rollout
	if ref := r.Spec.ObjectRef.WorkloadRef; ref != nil {
		// A Rollout naming no workload conflicts with none: validation rejects it for that alone.
		var err error
		if others, err = v.others(ctx, r.Namespace, ref.Kind, ref.Name); err != nil {
			return nil, nil, err
		}
	}
	warnings := rolloutadmission.V1alpha1Warnings(r)
	if req.Operation == admissionv1.Create {
		return rolloutadmission.ValidateV1alpha1Rollout(r, others, v.opts), warnings, nil
	}
	old := &rolloutsv1alpha1.Rollout{}
	if err := v.decode(req, req.OldObject, old); err != nil {
		return nil, nil, err
	}
	return rolloutadmission.ValidateV1alpha1RolloutUpdate(old, r, others, v.opts), warnings, nil
}

// listError is a failure to read the other Rollouts: the webhook's own, not the request's.
type listError struct{ error }

// errorCode answers a request the webhook failed to read the Rollouts for with 500, one it could not
// decode with 400.
func errorCode(err error) int32 {
	if errors.As(err, new(listError)) {
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// others are the namespace's Rollouts that name the workload kind/name, the only ones a Rollout can
// conflict with (rolloutsNaming).
func (v *rolloutValidator) others(ctx context.Context, namespace, kind, name string) ([]rolloutsv1beta1.Rollout, error) {
	list, err := rolloutsNaming(ctx, v.reader, namespace, kind, name)
	if err != nil {
		return nil, listError{err}
	}
	return list, nil
}

// decode reads one object of the request; the namespace comes from the request when the body omits it,
// so the conflict check compares like with like.
func (v *rolloutValidator) decode(req admission.Request, raw runtime.RawExtension, into client.Object) error {
	if err := v.decoder.DecodeRaw(raw, into); err != nil {
		return fmt.Errorf("decoding Rollout: %w", err)
	}
	if into.GetNamespace() == "" {
		into.SetNamespace(req.Namespace)
	}
	return nil
}
