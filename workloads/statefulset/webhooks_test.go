package statefulset

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	statefulsetadmission "github.com/flotilla-dev/flotilla/workloads/statefulset/admission"
)

var gates = statefulsetadmission.Options{AutoDeletePVC: true}

func testScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{storagev1.AddToScheme, kruiseappsv1alpha1.AddToScheme, kruiseappsv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// setWebhooks builds both handlers over a fake reader holding objs, with funcs intercepting it.
func setWebhooks(t testing.TB, funcs interceptor.Funcs, objs ...client.Object) map[string]admission.Handler {
	t.Helper()
	scheme := testScheme(t)
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
	return handlers(reader, admission.NewDecoder(scheme), gates)
}

// request is an admission request in version for a body (JSON) and, on updates, the stored one.
func request(op admissionv1.Operation, version, body, old string) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req", Namespace: "ns", Name: "web", Operation: op,
		Kind:     metav1.GroupVersionKind{Group: "apps.kruise.io", Version: version, Kind: "StatefulSet"},
		Resource: metav1.GroupVersionResource{Group: "apps.kruise.io", Version: version, Resource: "statefulsets"},
		Object:   runtime.RawExtension{Raw: []byte(body)},
	}}
	if old != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(old)}
	}
	return req
}

// userSet is a set as a user writes it, with a field no Go type knows.
const userSet = `{"apiVersion":"apps.kruise.io/v1beta1","kind":"StatefulSet","metadata":{"name":"web","namespace":"ns"},` +
	`"spec":{"serviceName":"web","podManagementPolicy":"Parallel","selector":{"matchLabels":{"app":"web"}},` +
	`"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"main","image":"nginx:1","futureField":"kept"}]}}}}`

// storedSet is a defaulted set as the API server stores it; change edits it first.
func storedSet(t testing.TB, change func(s *kruiseappsv1beta1.StatefulSet)) string {
	t.Helper()
	s := &kruiseappsv1beta1.StatefulSet{}
	if err := json.Unmarshal([]byte(userSet), s); err != nil {
		t.Fatal(err)
	}
	statefulsetadmission.Default(s, gates)
	if change != nil {
		change(s)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestDefaultingCreate(t *testing.T) {
	h := setWebhooks(t, interceptor.Funcs{})[MutateStatefulSetPath]
	for _, tc := range []struct {
		version string
		want    map[string]any
	}{
		{version: "v1beta1", want: map[string]any{
			"spec.replicas": float64(1), "spec.revisionHistoryLimit": float64(10), "spec.podManagementPolicy": "Parallel",
			"spec.updateStrategy.type": "RollingUpdate", "spec.updateStrategy.rollingUpdate.partition": float64(0),
			"spec.updateStrategy.rollingUpdate.maxUnavailable": float64(1), "spec.updateStrategy.rollingUpdate.podUpdatePolicy": "ReCreate",
			"spec.persistentVolumeClaimRetentionPolicy.whenScaled": "Retain",
			"spec.template.spec.containers.0.imagePullPolicy":      "Always", "spec.template.spec.containers.0.futureField": "kept",
		}},
		// v1alpha1 has no retention policy: the API server would prune it.
		{version: "v1alpha1", want: map[string]any{
			"spec.replicas": float64(1), "spec.updateStrategy.rollingUpdate.podUpdatePolicy": "ReCreate",
			"spec.persistentVolumeClaimRetentionPolicy": nil, "spec.template.spec.containers.0.futureField": "kept",
		}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			body := strings.Replace(userSet, "v1beta1", tc.version, 1)
			resp := h.Handle(context.Background(), request(admissionv1.Create, tc.version, body, ""))
			if !resp.Allowed || len(resp.Patches) == 0 {
				t.Fatalf("allowed %v with %d patches (result %+v)", resp.Allowed, len(resp.Patches), resp.Result)
			}
			doc := webhooktest.ApplyJSONPatch(t, body, resp)
			for path, v := range tc.want {
				if got := webhooktest.JSONLookup(doc, path); !cmp.Equal(got, v) {
					t.Errorf("%s = %#v, want %#v", path, got, v)
				}
			}
		})
	}
}

func TestDefaultingLeavesDefaultedAndForeignRequestsAlone(t *testing.T) {
	h := setWebhooks(t, interceptor.Funcs{})[MutateStatefulSetPath]
	stored := storedSet(t, nil)
	for name, req := range map[string]admission.Request{
		"defaulted create":  request(admissionv1.Create, "v1beta1", stored, ""),
		"scale subresource": webhooktest.WithSubResource(request(admissionv1.Update, "v1beta1", `{`, stored), "scale"),
		"delete":            request(admissionv1.Delete, "v1beta1", "", stored),
	} {
		t.Run(name, func(t *testing.T) {
			if resp := h.Handle(context.Background(), req); !resp.Allowed || len(resp.Patches) > 0 {
				t.Fatalf("allowed %v, patches %+v, result %+v", resp.Allowed, resp.Patches, resp.Result)
			}
		})
	}
}

func TestValidation(t *testing.T) {
	classes := []client.Object{&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}, AllowVolumeExpansion: ptr.To(false)}}
	handlers := setWebhooks(t, interceptor.Funcs{}, classes...)
	noGate := storedSet(t, func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType
	})
	withClaims := func(size string) string {
		return storedSet(t, func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.VolumeClaimUpdateStrategy.Type = kruiseappsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType
			s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{pvc(size)}
		})
	}
	for _, tc := range []struct {
		name string
		req  admission.Request
		want string // "" when allowed
	}{
		{name: "valid create", req: request(admissionv1.Create, "v1beta1", storedSet(t, nil), "")},
		{name: "in place without the readiness gate", req: request(admissionv1.Create, "v1beta1", noGate, ""),
			want: "spec.template.spec.readinessGates: Invalid value"},
		{name: "in place without the readiness gate, as v1alpha1", req: request(admissionv1.Create, "v1alpha1", asV1alpha1(noGate), ""),
			want: "must contains InPlaceUpdateReady when podUpdatePolicy is InPlaceIfPossible"},
		{name: "the service changed", req: request(admissionv1.Update, "v1beta1", strings.Replace(storedSet(t, nil), `"serviceName":"web"`, `"serviceName":"db"`, 1),
			storedSet(t, nil)), want: "spec.serviceName: Forbidden"},
		{name: "a claim template grown in a class that cannot expand", req: request(admissionv1.Update, "v1beta1", withClaims("2Gi"), withClaims("1Gi")),
			want: "spec.volumeClaimTemplates[0].spec.resources.requests.storage: Forbidden: storage class fixed does not support volume expansion"},
		{name: "status subresource", req: webhooktest.WithSubResource(request(admissionv1.Update, "v1beta1", `{"spec":{"replicas":-1}}`, `{}`), "status")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := handlers[ValidateStatefulSetPath].Handle(context.Background(), tc.req)
			if tc.want == "" {
				if !resp.Allowed {
					t.Fatalf("refused: %+v", resp.Result)
				}
				return
			}
			if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusUnprocessableEntity {
				t.Fatalf("allowed %v, result %+v; want a 422", resp.Allowed, resp.Result)
			}
			if !strings.Contains(resp.Result.Message, tc.want) {
				t.Errorf("message %q does not contain %q", resp.Result.Message, tc.want)
			}
		})
	}
}

func asV1alpha1(body string) string {
	return strings.Replace(body, `"apiVersion":"apps.kruise.io/v1beta1"`, `"apiVersion":"apps.kruise.io/v1alpha1"`, 1)
}

func TestValidationStorageClassReaderFailure(t *testing.T) {
	h := setWebhooks(t, interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("cache unavailable")
		},
	})[ValidateStatefulSetPath]
	claims := func(size string) string {
		return storedSet(t, func(s *kruiseappsv1beta1.StatefulSet) {
			s.Spec.VolumeClaimUpdateStrategy.Type = kruiseappsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType
			s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{pvc(size)}
		})
	}
	resp := h.Handle(context.Background(), request(admissionv1.Update, "v1beta1", claims("2Gi"), claims("1Gi")))
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusInternalServerError {
		t.Fatalf("allowed %v, result %+v; want a 500", resp.Allowed, resp.Result)
	}
}

func TestWebhooksRefuseMalformedObjects(t *testing.T) {
	handlers := setWebhooks(t, interceptor.Funcs{})
	stored := storedSet(t, nil)
	for _, path := range []string{MutateStatefulSetPath, ValidateStatefulSetPath} {
		for name, req := range map[string]admission.Request{
			"truncated":         request(admissionv1.Create, "v1beta1", `{"spec":`, ""),
			"wrong type":        request(admissionv1.Create, "v1alpha1", `{"spec":{"replicas":"three"}}`, ""),
			"array":             request(admissionv1.Create, "v1beta1", `[]`, ""),
			"bad stored object": request(admissionv1.Update, "v1beta1", stored, `{"spec":{"template":7}}`),
		} {
			t.Run(path+" "+name, func(t *testing.T) {
				resp := handlers[path].Handle(context.Background(), req)
				if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest {
					t.Fatalf("allowed %v, result %+v; want a 400", resp.Allowed, resp.Result)
				}
			})
		}
	}
}

func TestRegisterWebhooks(t *testing.T) {
	scheme := testScheme(t)
	srv := webhooktest.NewServer()
	if err := RegisterWebhooks(srv, fake.NewClientBuilder().WithScheme(scheme).Build(), scheme, gates); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{MutateStatefulSetPath, ValidateStatefulSetPath}, srv.Paths()); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if err := RegisterWebhooks(webhooktest.NewServer(), nil, scheme, gates); err == nil {
		t.Error("no error without a reader")
	}
}

// The chart's entries: served paths, creates and updates of both versions, failing closed like upstream, and
// defaulting before the Rollout engine's freezing webhook (which compares templates), again if it changes
// the object.
func TestWebhookConfiguration(t *testing.T) {
	mutating, validating := webhooktest.Configurations(t)
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"apps.kruise.io"}, APIVersions: []string{"v1alpha1", "v1beta1"}, Resources: []string{"statefulsets"},
		},
	}}
	defaulting, freezing := -1, -1
	for i, w := range mutating.Webhooks {
		switch w.Name {
		case "mstatefulset.kb.io":
			defaulting = i
			webhooktest.CheckFailsClosed(t, w.Name, w.ClientConfig, MutateStatefulSetPath, w.Rules, rules, w.FailurePolicy, w.ObjectSelector)
			if w.ReinvocationPolicy == nil || *w.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
				t.Errorf("webhook %s reinvocationPolicy is not IfNeeded", w.Name)
			}
		case "munifiedworload.kb.io":
			freezing = i
		}
	}
	if defaulting < 0 || freezing < 0 || defaulting > freezing {
		t.Errorf("mstatefulset.kb.io at %d, munifiedworload.kb.io at %d: defaulting must come first", defaulting, freezing)
	}
	for _, w := range validating.Webhooks {
		if w.Name == "vstatefulset.kb.io" {
			webhooktest.CheckFailsClosed(t, w.Name, w.ClientConfig, ValidateStatefulSetPath, w.Rules, rules, w.FailurePolicy, w.ObjectSelector)
			return
		}
	}
	t.Error("no vstatefulset.kb.io webhook")
}

// FuzzWebhooks feeds arbitrary bodies to both handlers in both versions, on create and as updates of a
// stored set: every request is answered, a refusal always with a code, and nothing panics.
func FuzzWebhooks(f *testing.F) {
	stored := storedSet(f, nil)
	for _, seed := range []string{userSet, stored, `{`, `null`, `[]`, `{"spec":{"reserveOrdinals":["9-1",-1],"updateStrategy":{"type":"OnDelete","rollingUpdate":{}}}}`,
		`{"spec":{"volumeClaimUpdateStrategy":{"type":"OnPodRollingUpdate"},"volumeClaimTemplates":[{},{"spec":{"storageClassName":"x"}}]}}`} {
		f.Add(seed)
	}
	handlers := setWebhooks(f, interceptor.Funcs{})
	f.Fuzz(func(t *testing.T, body string) {
		for _, version := range []string{"v1alpha1", "v1beta1"} {
			for _, req := range []admission.Request{request(admissionv1.Create, version, body, ""), request(admissionv1.Update, version, body, stored)} {
				for path, h := range handlers {
					if resp := h.Handle(context.Background(), req); !resp.Allowed && (resp.Result == nil || resp.Result.Code == 0) {
						t.Fatalf("%s refused without a code: %+v", path, resp.Result)
					}
				}
			}
		}
	})
}

func pvc(size string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: ptr.To("fixed"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
	}}
}
