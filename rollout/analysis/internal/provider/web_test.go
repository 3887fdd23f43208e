package provider

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

func webRequest(spec *analysisv1alpha1.WebMetric) Request {
	run := &analysisv1alpha1.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "canary"}}
	return Request{Run: run, Metric: &analysisv1alpha1.Metric{Name: "ci", Provider: analysisv1alpha1.MetricProvider{Web: spec}}, Index: 1, Now: now}
}

// ciServer is a CI system's API: GET /pipelines/<id> answers the pipeline's state, POST /checks answers the
// verdict on the revision the body names; both want the token.
func ciServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pipelines/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0ken" {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, `{"id":"`+r.PathValue("id")+`","state":"passed","jobs":[{"name":"unit","ms":1200},{"name":"e2e","ms":56000}],"flaky":null}`)
	})
	mux.HandleFunc("POST /checks", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Revision string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"revision": in.Revision, "errorRate": 0.004})
	})
	mux.HandleFunc("GET /text", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "OK\n") })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestWeb(t *testing.T) {
	srv := ciServer(t)
	auth := []analysisv1alpha1.WebHeader{{Name: "Authorization", Value: "Bearer t0ken"}}
	cases := []struct {
		name   string
		spec   analysisv1alpha1.WebMetric
		want   any
		errMsg string
	}{
		{name: "one value", spec: analysisv1alpha1.WebMetric{URL: srv.URL + "/pipelines/7", Headers: auth, JSONPath: "{$.state}"}, want: "passed"},
		{name: "several values", spec: analysisv1alpha1.WebMetric{URL: srv.URL + "/pipelines/7", Headers: auth, JSONPath: "{.jobs[*].ms}"},
			want: []any{1200.0, 56000.0}},
		{name: "whole answer", spec: analysisv1alpha1.WebMetric{URL: srv.URL + "/pipelines/7", Headers: auth},
			want: map[string]any{"id": "7", "state": "passed", "flaky": nil, "jobs": []any{
				map[string]any{"name": "unit", "ms": 1200.0}, map[string]any{"name": "e2e", "ms": 56000.0}}}},
		{name: "a null", spec: analysisv1alpha1.WebMetric{URL: srv.URL + "/pipelines/7", Headers: auth, JSONPath: "{.flaky}"}, want: nil},
		{name: "POST with a body", spec: analysisv1alpha1.WebMetric{URL: srv.URL + "/checks", Method: analysisv1alpha1.WebMethodPost,
			Body: `{"revision":"abc123"}`, JSONPath: "{.errorRate}"}, want: 0.004},
		{name: "text answer", spec: analysisv1alpha1.WebMetric{URL: srv.URL + "/text"}, want: "OK"},
		{name: "text answer with a path", spec: analysisv1alpha1.WebMetric{URL: srv.URL + "/text", JSONPath: "{.x}"}, errMsg: "the answer is not JSON: OK\n"},
		{name: "unauthorized", spec: analysisv1alpha1.WebMetric{URL: srv.URL + "/pipelines/7"},
			errMsg: `answered 401 Unauthorized: {"error":"unauthorized"}` + "\n"},
		{name: "missing key", spec: analysisv1alpha1.WebMetric{URL: srv.URL + "/pipelines/7", Headers: auth, JSONPath: "{.status}"},
			errMsg: "jsonPath {.status}: status is not found"},
		{name: "empty match", spec: analysisv1alpha1.WebMetric{URL: srv.URL + "/pipelines/7", Headers: auth, JSONPath: "{.jobs[?(@.name==\"lint\")].ms}"},
			errMsg: `jsonPath {.jobs[?(@.name=="lint")].ms} matches nothing in the answer`},
		{name: "not http", spec: analysisv1alpha1.WebMetric{URL: "ftp://example/x"}, errMsg: "the web metric's url is not an http or https URL"},
	}
	w := &Web{Clients: &HTTPClients{}, Secrets: secrets(nil)}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := w.Measure(context.Background(), webRequest(&c.spec))
			if c.errMsg != "" {
				if err == nil || err.Error() != c.errMsg {
					t.Errorf("error %v, want %q", err, c.errMsg)
				}
				return
			}
			if err != nil || !o.Done || !reflect.DeepEqual(o.Value, c.want) {
				t.Errorf("Measure = %#v, %v; want %#v", o.Value, err, c.want)
			}
		})
	}
}

// A URL holding a secret argument never reaches an error message.
func TestWebErrorsHideTheURL(t *testing.T) {
	srv := ciServer(t)
	srv.Close()
	w := &Web{Clients: &HTTPClients{}, Secrets: secrets(nil)}
	_, err := w.Measure(context.Background(), webRequest(&analysisv1alpha1.WebMetric{URL: srv.URL + "/pipelines/7?token=hunter2"}))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %v", err)
	}
	_, err = w.Measure(context.Background(), webRequest(&analysisv1alpha1.WebMetric{URL: "http://[::1%hunter2"}))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %v", err)
	}
}
