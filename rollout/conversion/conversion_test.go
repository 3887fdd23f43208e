package conversion

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

const (
	alphaRollout = `{"apiVersion":"rollouts.kruise.io/v1alpha1","kind":"Rollout",
		"metadata":{"name":"web","namespace":"demo"},
		"spec":{"objectRef":{"workloadRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"}},
		"strategy":{"canary":{"steps":[{"weight":20},{"weight":50,"replicas":3}]}}}}`
	betaRollout = `{"apiVersion":"rollouts.kruise.io/v1beta1","kind":"Rollout",
		"metadata":{"name":"web","namespace":"demo"},
		"spec":{"workloadRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},
		"strategy":{"canary":{"steps":[{"traffic":"30%","replicas":"30%"}]}}}}`
	alphaBatchRelease = `{"apiVersion":"rollouts.kruise.io/v1alpha1","kind":"BatchRelease",
		"metadata":{"name":"web","namespace":"demo"},
		"spec":{"targetReference":{"workloadRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"}},
		"releasePlan":{"batches":[{"canaryReplicas":"10%"}]}}}`
)

func conversionScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := rolloutsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := rolloutsv1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// newConversionHandler serves what the manager serves on /convert for this module.
func newConversionHandler(scheme *runtime.Scheme) (http.Handler, error) {
	registry := conversion.NewRegistry()
	if err := Register(scheme, registry); err != nil {
		return nil, err
	}
	return conversion.NewWebhookHandler(scheme, registry), nil
}

func TestConversionHandler(t *testing.T) {
	h, err := newConversionHandler(conversionScheme(t))
	if err != nil {
		t.Fatalf("newConversionHandler: %v", err)
	}
	tests := []struct {
		name      string
		object    string
		desired   string
		wantField []string // path into the converted object
		wantValue any
		wantFail  string
	}{
		{name: "rollout to hub", object: alphaRollout, desired: "rollouts.kruise.io/v1beta1",
			wantField: []string{"spec", "workloadRef", "name"}, wantValue: "web"},
		{name: "rollout weight becomes traffic", object: alphaRollout, desired: "rollouts.kruise.io/v1beta1",
			wantField: []string{"spec", "strategy", "canary", "steps", "0", "traffic"}, wantValue: "20%"},
		{name: "rollout from hub", object: betaRollout, desired: "rollouts.kruise.io/v1alpha1",
			wantField: []string{"spec", "objectRef", "workloadRef", "kind"}, wantValue: "Deployment"},
		{name: "rollout traffic becomes weight", object: betaRollout, desired: "rollouts.kruise.io/v1alpha1",
			wantField: []string{"spec", "strategy", "canary", "steps", "0", "weight"}, wantValue: float64(30)},
		{name: "batchrelease to hub", object: alphaBatchRelease, desired: "rollouts.kruise.io/v1beta1",
			wantField: []string{"spec", "workloadRef", "name"}, wantValue: "web"},
		{name: "same version", object: alphaRollout, desired: "rollouts.kruise.io/v1alpha1", wantFail: "not allowed"},
		{name: "unknown version", object: alphaRollout, desired: "rollouts.kruise.io/v9", wantFail: "v9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := postConversion(t, h, tt.object, tt.desired)
			if tt.wantFail != "" {
				if resp.Result.Status != metav1.StatusFailure || !strings.Contains(resp.Result.Message, tt.wantFail) {
					t.Fatalf("result = %+v, want a failure mentioning %q", resp.Result, tt.wantFail)
				}
				return
			}
			if resp.Result.Status != metav1.StatusSuccess || len(resp.ConvertedObjects) != 1 {
				t.Fatalf("result = %+v with %d objects", resp.Result, len(resp.ConvertedObjects))
			}
			got := fieldAt(t, resp.ConvertedObjects[0].Raw, tt.wantField)
			if got != tt.wantValue {
				t.Errorf("%s = %v (%T), want %v", strings.Join(tt.wantField, "."), got, got, tt.wantValue)
			}
			if apiVersion := fieldAt(t, resp.ConvertedObjects[0].Raw, []string{"apiVersion"}); apiVersion != tt.desired {
				t.Errorf("apiVersion = %v, want %s", apiVersion, tt.desired)
			}
		})
	}
}

func TestConversionHandlerNeedsTypes(t *testing.T) {
	if _, err := newConversionHandler(runtime.NewScheme()); err == nil {
		t.Fatal("want an error for a scheme without the rollouts types")
	}
}

func TestConversionHandlerRejectsGarbage(t *testing.T) {
	h, err := newConversionHandler(conversionScheme(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", strings.NewReader("{not json")))
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("status = %d, want 400", rec.Code)
	}
}

func postConversion(t *testing.T, h http.Handler, object, desired string) *apiextensionsv1.ConversionResponse {
	t.Helper()
	review := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{
			UID: "uid-1", DesiredAPIVersion: desired,
			Objects: []runtime.RawExtension{{Raw: []byte(object)}},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body)))
	var out apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("decoding response (%d): %v", rec.Code, err)
	}
	if out.Response == nil || out.Response.UID != "uid-1" {
		t.Fatalf("response missing or with the wrong UID: %+v", out.Response)
	}
	return out.Response
}

// fieldAt walks maps by key and slices by decimal index.
func fieldAt(t *testing.T, raw []byte, path []string) any {
	t.Helper()
	var obj any
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	for _, p := range path {
		switch v := obj.(type) {
		case map[string]any:
			obj = v[p]
		case []any:
			var i int
			if err := json.Unmarshal([]byte(p), &i); err != nil || i >= len(v) {
				t.Fatalf("bad index %q", p)
			}
			obj = v[i]
		default:
			t.Fatalf("no field %q in %v", p, obj)
		}
	}
	return obj
}
