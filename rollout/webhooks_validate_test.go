package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rolloutadmission "github.com/flotilla-dev/flotilla/rollout/admission"
	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	rolloutcontroller "github.com/flotilla-dev/flotilla/rollout/internal/controller/rollout"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func rolloutTestScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		appsv1.AddToScheme, rolloutsv1alpha1.AddToScheme, rolloutsv1beta1.AddToScheme, kruiseappsv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// handlersFor builds the rollout handlers over a fake reader holding objs.
func handlersFor(t *testing.T, objs ...client.Object) map[string]admission.Handler {
	t.Helper()
	scheme := rolloutTestScheme(t)
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	return rolloutHandlers(Readers{Cached: reader}, admission.NewDecoder(scheme), rolloutadmission.DefaultOptions())
}

// indexedHandlersFor builds the rollout handlers over a reader with the Rollout controller's workload index,
// as the manager's cache has it.
func indexedHandlersFor(t *testing.T, objs ...client.Object) map[string]admission.Handler {
	t.Helper()
	scheme := rolloutTestScheme(t)
	reader := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&rolloutsv1beta1.Rollout{}, rolloutcontroller.WorkloadRefIndex, rolloutcontroller.WorkloadRefKey).
		WithObjects(objs...).Build()
	return rolloutHandlers(Readers{Cached: reader}, admission.NewDecoder(scheme), rolloutadmission.DefaultOptions())
}

// failingHandlers builds the rollout handlers over a reader whose every List fails.
func failingHandlers(t *testing.T) map[string]admission.Handler {
	t.Helper()
	scheme := rolloutTestScheme(t)
	reader := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("cache unavailable")
		},
	}).Build()
	return rolloutHandlers(Readers{Cached: reader}, admission.NewDecoder(scheme), rolloutadmission.DefaultOptions())
}

func rawJSON(t *testing.T, obj any) runtime.RawExtension {
	t.Helper()
	if obj == nil {
		return runtime.RawExtension{}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

// request builds an admission request for obj (and old, on updates) of the given kind.
func request(t *testing.T, op admissionv1.Operation, gvk metav1.GroupVersionKind, obj, old any) admission.Request {
	t.Helper()
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req", Kind: gvk, Namespace: "ns", Name: "x", Operation: op,
		Object: rawJSON(t, obj), OldObject: rawJSON(t, old),
	}}
}

var (
	rolloutV1beta1GVK  = metav1.GroupVersionKind{Group: "rollouts.kruise.io", Version: "v1beta1", Kind: "Rollout"}
	rolloutV1alpha1GVK = metav1.GroupVersionKind{Group: "rollouts.kruise.io", Version: "v1alpha1", Kind: "Rollout"}
)

func betaRollout(name, workload string) *rolloutsv1beta1.Rollout {
	return &rolloutsv1beta1.Rollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rollouts.kruise.io/v1beta1", Kind: "Rollout"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: workload},
			Strategy: rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{
				Steps: []rolloutsv1beta1.CanaryStep{{Replicas: ptr.To(intstr.FromInt32(1))}, {Replicas: ptr.To(intstr.FromString("100%"))}},
			}},
		},
	}
}

func alphaRolloutObject(style string) *rolloutsv1alpha1.Rollout {
	return &rolloutsv1alpha1.Rollout{
		TypeMeta: metav1.TypeMeta{APIVersion: "rollouts.kruise.io/v1alpha1", Kind: "Rollout"},
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns",
			Annotations: map[string]string{rolloutsv1alpha1.RolloutStyleAnnotation: style}},
		Spec: rolloutsv1alpha1.RolloutSpec{
			ObjectRef: rolloutsv1alpha1.ObjectRef{WorkloadRef: &rolloutsv1alpha1.WorkloadRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "echo"}},
			Strategy: rolloutsv1alpha1.RolloutStrategy{Canary: &rolloutsv1alpha1.CanaryStrategy{
				Steps: []rolloutsv1alpha1.CanaryStep{{TrafficRoutingStrategy: rolloutsv1alpha1.TrafficRoutingStrategy{Weight: ptr.To[int32](20)}}},
			}},
		},
	}
}

type responseWant struct {
	allowed bool
	code    int32  // checked when not zero
	message string // a substring of the result message, checked when not empty
	// warning is a substring of the response's only warning, checked when not empty (none otherwise).
	warning string
}

func checkResponse(t *testing.T, resp admission.Response, want responseWant) {
	t.Helper()
	if resp.Allowed != want.allowed {
		t.Errorf("allowed = %v, want %v (result %+v)", resp.Allowed, want.allowed, resp.Result)
	}
	if want.code != 0 && (resp.Result == nil || resp.Result.Code != want.code) {
		t.Errorf("result %+v, want code %d", resp.Result, want.code)
	}
	if want.message != "" && (resp.Result == nil || !strings.Contains(resp.Result.Message, want.message)) {
		t.Errorf("result %+v, want a message containing %q", resp.Result, want.message)
	}
	switch {
	case want.warning == "" && len(resp.Warnings) > 0:
		t.Errorf("warnings %q, want none", resp.Warnings)
	case want.warning != "" && (len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], want.warning)):
		t.Errorf("warnings %q, want one containing %q", resp.Warnings, want.warning)
	}
}

func TestRolloutValidatorHandle(t *testing.T) {
	invalid := betaRollout("demo", "echo")
	invalid.Spec.Strategy.Canary.Steps[0].Replicas = ptr.To(intstr.FromInt32(0))
	invalid.Spec.WorkloadRef.Kind = ""
	unrouted := betaRollout("demo", "echo")
	unrouted.Spec.Strategy.Canary.Steps[0].Traffic = ptr.To("10%")
	progressing := betaRollout("demo", "echo")
	progressing.Status.Phase = rolloutsv1beta1.RolloutPhaseProgressing
	moved := progressing.DeepCopy()
	moved.Spec.WorkloadRef.Name = "web"
	existing := betaRollout("first", "echo")
	existing.TypeMeta = metav1.TypeMeta{}

	cases := []struct {
		name     string
		existing []client.Object
		req      admission.Request
		want     responseWant
	}{
		{name: "valid create", req: request(t, admissionv1.Create, rolloutV1beta1GVK, betaRollout("demo", "echo"), nil),
			want: responseWant{allowed: true}},
		{name: "invalid create lists every error", req: request(t, admissionv1.Create, rolloutV1beta1GVK, invalid, nil),
			want: responseWant{code: http.StatusForbidden, message: `[spec.workloadRef.kind: Required value, spec.strategy.canary.steps[0].replicas: Invalid value: "0": must be greater than 0]`}},
		{name: "traffic without trafficRoutings is accepted with a warning, as upstream accepts it",
			req:  request(t, admissionv1.Create, rolloutV1beta1GVK, unrouted, nil),
			want: responseWant{allowed: true, warning: "spec.strategy.canary.steps[0].traffic: has no effect without spec.strategy.canary.trafficRoutings"}},
		{name: "second Rollout for a workload", existing: []client.Object{existing},
			req:  request(t, admissionv1.Create, rolloutV1beta1GVK, betaRollout("demo", "echo"), nil),
			want: responseWant{message: "the workload is already released by Rollout first"}},
		{name: "another workload", existing: []client.Object{existing},
			req: request(t, admissionv1.Create, rolloutV1beta1GVK, betaRollout("demo", "web"), nil), want: responseWant{allowed: true}},
		{name: "update while progressing", req: request(t, admissionv1.Update, rolloutV1beta1GVK, progressing, progressing),
			want: responseWant{allowed: true}},
		{name: "workload change while progressing", req: request(t, admissionv1.Update, rolloutV1beta1GVK, moved, progressing),
			want: responseWant{message: "spec.workloadRef: Forbidden: is immutable while the Rollout is Progressing"}},
		{name: "v1alpha1 create", req: request(t, admissionv1.Create, rolloutV1alpha1GVK, alphaRolloutObject("partition"), nil),
			want: responseWant{allowed: true}},
		{name: "v1alpha1 create with a bad rolling style", req: request(t, admissionv1.Create, rolloutV1alpha1GVK, alphaRolloutObject("blue"), nil),
			want: responseWant{message: `metadata.annotations[rollouts.kruise.io/rolling-style]: Unsupported value: "blue"`}},
		{name: "v1alpha1 update", req: request(t, admissionv1.Update, rolloutV1alpha1GVK, alphaRolloutObject("canary"), alphaRolloutObject("")),
			want: responseWant{allowed: true}},
		{name: "delete", req: request(t, admissionv1.Delete, rolloutV1beta1GVK, nil, invalid), want: responseWant{allowed: true}},
		{name: "status subresource", req: func() admission.Request {
			r := request(t, admissionv1.Update, rolloutV1beta1GVK, invalid, invalid)
			r.SubResource = "status"
			return r
		}(), want: responseWant{allowed: true}},
		{name: "undecodable object", req: admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Kind: rolloutV1beta1GVK, Namespace: "ns", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte("{")},
		}}, want: responseWant{code: http.StatusBadRequest}},
		{name: "update without the stored object", req: request(t, admissionv1.Update, rolloutV1beta1GVK, progressing, nil),
			want: responseWant{code: http.StatusBadRequest}},
	}
	readers := map[string]func(*testing.T, ...client.Object) map[string]admission.Handler{
		"through the workload index": indexedHandlersFor, "listing the namespace": handlersFor}
	for how, handlers := range readers {
		for _, tc := range cases {
			t.Run(how+"/"+tc.name, func(t *testing.T) {
				resp := handlers(t, tc.existing...)[ValidateRolloutPath].Handle(context.Background(), tc.req)
				checkResponse(t, resp, tc.want)
			})
		}
	}
}

func TestRolloutValidatorReaderFailure(t *testing.T) {
	req := request(t, admissionv1.Create, rolloutV1beta1GVK, betaRollout("demo", "echo"), nil)
	resp := failingHandlers(t)[ValidateRolloutPath].Handle(context.Background(), req)
	checkResponse(t, resp, responseWant{code: http.StatusInternalServerError, message: "cache unavailable"})
}
