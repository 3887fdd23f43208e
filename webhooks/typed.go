package webhooks

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Object is a pointer to a typed API object T, such as *v1alpha1.DaemonSet.
type Object[T any] interface {
	*T
	runtime.Object
}

// Defaulting answers creates and updates of kind with the patch that def makes to the object (old is the
// stored object on update, nil on create), merged into the request's raw object (PatchResponse).
func Defaulting[T any, P Object[T]](decoder admission.Decoder, kind string, def func(cur, old P)) admission.Handler {
	return CreatesAndUpdates(func(_ context.Context, req admission.Request) admission.Response {
		cur, old, err := Decode[T, P](decoder, req, kind)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		out, _ := cur.DeepCopyObject().(P)
		def(out, old)
		if equality.Semantic.DeepEqual(cur, out) {
			return admission.Allowed("")
		}
		resp, err := PatchResponse(req.Object.Raw, (*T)(cur), (*T)(out))
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, fmt.Errorf("building the %s patch: %w", kind, err))
		}
		return resp
	})
}

// Validating answers creates and updates of kind: refused with 422 (Invalid, as for a schema error) naming
// every field validate finds wrong.
func Validating[T any, P Object[T]](decoder admission.Decoder, kind string, validate func(cur, old P) field.ErrorList) admission.Handler {
	return CreatesAndUpdates(func(_ context.Context, req admission.Request) admission.Response {
		cur, old, err := Decode[T, P](decoder, req, kind)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if errs := validate(cur, old); len(errs) > 0 {
			return admission.Errored(http.StatusUnprocessableEntity, errs.ToAggregate())
		}
		return admission.Allowed("")
	})
}

// NamespacedObject is a pointer to a typed namespaced API object T.
type NamespacedObject[T any] interface {
	*T
	client.Object
}

// ObjectList is a pointer to a typed list L, such as *v1alpha1.WorkloadSpreadList.
type ObjectList[L any] interface {
	*L
	client.ObjectList
}

// ValidatingWithPeers is Validating for kinds whose rules involve the other objects of the namespace (two of
// them may not claim one workload): validate also gets the namespace's objects of the kind, listed through
// reader (the manager's cache), and returns warnings for an admitted object.
func ValidatingWithPeers[T, L any, P NamespacedObject[T], PL ObjectList[L]](decoder admission.Decoder, reader client.Reader,
	kind string, validate func(cur, old P, peers PL) (field.ErrorList, []string)) admission.Handler {
	return CreatesAndUpdates(func(ctx context.Context, req admission.Request) admission.Response {
		cur, old, err := decodeNamespaced[T, P](decoder, req, kind)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		peers := PL(new(L))
		if err := reader.List(ctx, peers, client.InNamespace(cur.GetNamespace())); err != nil {
			return admission.Errored(http.StatusInternalServerError, fmt.Errorf("listing the %ss of %s: %w", kind, cur.GetNamespace(), err))
		}
		errs, warnings := validate(cur, old, peers)
		if len(errs) > 0 {
			return admission.Errored(http.StatusUnprocessableEntity, errs.ToAggregate())
		}
		return admission.Allowed("").WithWarnings(warnings...)
	})
}

// decodeNamespaced is Decode, with the request's namespace on an object that names none (a create of a
// manifest without one).
func decodeNamespaced[T any, P NamespacedObject[T]](decoder admission.Decoder, req admission.Request, kind string) (cur, old P, err error) {
	cur, old, err = Decode[T, P](decoder, req, kind)
	if err == nil && cur.GetNamespace() == "" {
		cur.SetNamespace(req.Namespace)
	}
	return cur, old, err
}

// Decode reads the request's object and, on update, the stored one (nil otherwise).
func Decode[T any, P Object[T]](decoder admission.Decoder, req admission.Request, kind string) (cur, old P, err error) {
	cur = new(T)
	if err := decoder.DecodeRaw(req.Object, cur); err != nil {
		return nil, nil, fmt.Errorf("decoding the %s: %w", kind, err)
	}
	if req.Operation != admissionv1.Update {
		return cur, nil, nil
	}
	old = new(T)
	if err := decoder.DecodeRaw(req.OldObject, old); err != nil {
		return nil, nil, fmt.Errorf("decoding the stored %s: %w", kind, err)
	}
	return cur, old, nil
}
