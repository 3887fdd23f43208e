package cloneset

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	clonesetadmission "github.com/flotilla-dev/flotilla/workloads/cloneset/admission"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// Paths of the CloneSet admission webhooks. The validating path is upstream's; upstream's mutating path
// already serves the Rollout engine's freezing webhook (rollout.MutateCloneSetPath), so defaulting has its own.
const (
	DefaultCloneSetPath  = "/default-apps-kruise-io-v1alpha1-cloneset"
	ValidateCloneSetPath = "/validate-apps-kruise-io-v1alpha1-cloneset"
)

// RegisterWebhooks serves the CloneSet defaulting and validating webhooks on srv, and adds the module's
// mutation to the pod webhook: the KruisePodReady readiness gate. reader gets the pods named in
// spec.scaleStrategy.podsToDelete (a cache is fine: a pod it has not seen yet is refused and the user
// retries); scheme must know core/v1 and the apps.kruise.io v1alpha1 kinds. Call it once, before the server
// starts.
func RegisterWebhooks(srv webhook.Server, reader client.Reader, scheme *runtime.Scheme, pods *webhooks.PodChain) error {
	if srv == nil || reader == nil || scheme == nil || pods == nil {
		return errors.New("registering the CloneSet webhooks: server, reader, scheme and pod chain are required")
	}
	webhooks.Serve(srv, cloneSetHandlers(reader, admission.NewDecoder(scheme)))
	pods.Add(injectReadinessGate)
	return nil
}

func cloneSetHandlers(reader client.Reader, decoder admission.Decoder) map[string]admission.Handler {
	a := &cloneSetAdmission{reader: reader, decoder: decoder}
	return map[string]admission.Handler{
		DefaultCloneSetPath:  webhooks.CreatesAndUpdates(a.defaults),
		ValidateCloneSetPath: webhooks.CreatesAndUpdates(a.validate),
	}
}

// cloneSetAdmission answers both CloneSet webhooks.
type cloneSetAdmission struct {
	reader  client.Reader
	decoder admission.Decoder
}

// defaults answers with the patch that applies upstream's defaults.
func (a *cloneSetAdmission) defaults(_ context.Context, req admission.Request) admission.Response {
	cur, old, err := a.decode(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	out := cur.DeepCopy()
	clonesetadmission.DefaultUpdate(out, old) // old is nil on create: everything is defaulted
	if equality.Semantic.DeepEqual(cur, out) {
		return admission.Allowed("")
	}
	return webhooks.PatchOrReplace(req.Object.Raw, cur, out)
}

// validate refuses a CloneSet that breaks upstream's rules, naming every faulty field.
func (a *cloneSetAdmission) validate(ctx context.Context, req admission.Request) admission.Response {
	cur, old, err := a.decode(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	pods, err := a.pods(ctx, cur.Namespace, clonesetadmission.NewPodsToDelete(cur, old))
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if errs := clonesetadmission.Validate(cur, old, pods); len(errs) > 0 {
		// Upstream answers 422 (Invalid), so clients see the same status as for a schema error.
		return admission.Errored(http.StatusUnprocessableEntity, errs.ToAggregate())
	}
	return admission.Allowed("")
}

// decode reads the CloneSet and, on update, the stored one (nil on create). The namespace comes from the
// request when the body omits it.
func (a *cloneSetAdmission) decode(req admission.Request) (cur, old *kruiseappsv1alpha1.CloneSet, err error) {
	cur = &kruiseappsv1alpha1.CloneSet{}
	if err := a.decoder.DecodeRaw(req.Object, cur); err != nil {
		return nil, nil, fmt.Errorf("decoding the CloneSet: %w", err)
	}
	if cur.Namespace == "" {
		cur.Namespace = req.Namespace
	}
	if req.Operation != admissionv1.Update {
		return cur, nil, nil
	}
	old = &kruiseappsv1alpha1.CloneSet{}
	if err := a.decoder.DecodeRaw(req.OldObject, old); err != nil {
		return nil, nil, fmt.Errorf("decoding the stored CloneSet: %w", err)
	}
	return cur, old, nil
}

// pods gets the named pods of the namespace; names that cannot be pods' and missing pods are left out,
// for the validation to report.
func (a *cloneSetAdmission) pods(ctx context.Context, namespace string, names []string) (map[string]*corev1.Pod, error) {
	pods := make(map[string]*corev1.Pod, len(names))
	for _, name := range names {
		if _, done := pods[name]; done || len(validation.IsDNS1123Subdomain(name)) > 0 {
			continue
		}
		pod := &corev1.Pod{}
		err := a.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading pod %s/%s: %w", namespace, name, err)
		}
		pods[name] = pod
	}
	return pods, nil
}
