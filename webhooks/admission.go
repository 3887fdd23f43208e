package webhooks

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// What every module's admission handlers share: serving them, which requests reach them, and turning the
// change a handler made to a typed object into a patch of the request.

// Serve puts each handler on its path of srv. Call it before the server starts.
func Serve(srv webhook.Server, handlers map[string]admission.Handler) {
	for path, h := range handlers {
		srv.Register(path, &webhook.Admission{Handler: h})
	}
}

// CreatesOnly lets only creations of the main resource reach h; anything else is allowed unchanged.
func CreatesOnly(h admission.HandlerFunc) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		if req.Operation != admissionv1.Create || req.SubResource != "" {
			return admission.Allowed("")
		}
		return h(ctx, req)
	})
}

// UpdatesOnly lets only updates of the main resource reach h; anything else is allowed unchanged.
func UpdatesOnly(h admission.HandlerFunc) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		if req.Operation != admissionv1.Update || req.SubResource != "" {
			return admission.Allowed("")
		}
		return h(ctx, req)
	})
}

// CreatesAndUpdates lets only creations and updates of the main resource reach h; anything else is allowed
// unchanged.
func CreatesAndUpdates(h admission.HandlerFunc) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		if req.SubResource != "" || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
			return admission.Allowed("")
		}
		return h(ctx, req)
	})
}
