package conversion

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// BenchmarkRolloutConversion times the typed conversion functions alone.
func BenchmarkRolloutConversion(b *testing.B) {
	var alpha rolloutsv1alpha1.Rollout
	var beta rolloutsv1beta1.Rollout
	if err := json.Unmarshal([]byte(alphaRollout), &alpha); err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal([]byte(betaRollout), &beta); err != nil {
		b.Fatal(err)
	}
	b.Run("v1alpha1-to-v1beta1", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out rolloutsv1beta1.Rollout
			if err := rolloutsv1alpha1.ConvertRolloutToV1beta1(alpha.DeepCopy(), &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("v1beta1-to-v1alpha1", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out rolloutsv1alpha1.Rollout
			if err := rolloutsv1alpha1.ConvertRolloutFromV1beta1(beta.DeepCopy(), &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkConversionWebhook times what the API server waits for on each
// conversion: one ConversionReview through the manager's /convert handler.
func BenchmarkConversionWebhook(b *testing.B) {
	s := runtime.NewScheme()
	if err := rolloutsv1alpha1.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	if err := rolloutsv1beta1.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	h, err := newConversionHandler(s)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("v1alpha1-to-v1beta1", func(b *testing.B) { benchConvert(b, h, alphaRollout, "rollouts.kruise.io/v1beta1") })
	b.Run("v1beta1-to-v1alpha1", func(b *testing.B) { benchConvert(b, h, betaRollout, "rollouts.kruise.io/v1alpha1") })
}

func benchConvert(b *testing.B, h http.Handler, object, desired string) {
	body, err := json.Marshal(apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{
			UID: "uid-1", DesiredAPIVersion: desired, Objects: []runtime.RawExtension{{Raw: []byte(object)}},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body)))
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"status":"Success"`)) {
			b.Fatalf("conversion failed: %d %s", rec.Code, rec.Body.String())
		}
	}
}
