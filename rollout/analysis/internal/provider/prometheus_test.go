package provider

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

var now = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

// fakePrometheus answers /api/v1/query and /api/v1/query_range as Prometheus's HTTP API does, with the
// answer its test sets, and records the requests it got.
type fakePrometheus struct {
	mu       sync.Mutex
	code     int
	answer   string
	requests []*http.Request
}

func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = r.ParseForm()
	f.requests = append(f.requests, r)
	if !strings.HasSuffix(r.URL.Path, "/api/v1/query") && !strings.HasSuffix(r.URL.Path, "/api/v1/query_range") {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.code)
	_, _ = fmt.Fprint(w, f.answer)
}

func (f *fakePrometheus) last() *http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1]
}

func (f *fakePrometheus) set(code int, answer string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.code, f.answer = code, answer
}

// secrets serves Secret keys from a map of "<namespace>/<name>/<key>".
func secrets(data map[string]string) SecretFunc {
	return func(_ context.Context, ns string, ref *corev1.SecretKeySelector) ([]byte, error) {
		v, ok := data[ns+"/"+ref.Name+"/"+ref.Key]
		if !ok {
			return nil, fmt.Errorf("secret %s/%s has no key %s", ns, ref.Name, ref.Key)
		}
		return []byte(v), nil
	}
}

func promRequest(spec *analysisv1alpha1.PrometheusMetric) Request {
	run := &analysisv1alpha1.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "canary"}}
	return Request{Run: run, Metric: &analysisv1alpha1.Metric{Name: "error-rate",
		Provider: analysisv1alpha1.MetricProvider{Prometheus: spec}}, Index: 1, Now: now}
}

const vectorOfOne = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"service":"web"},"value":[1796464800,"0.012"]}]}}`

func TestPrometheusInstantQuery(t *testing.T) {
	fake := &fakePrometheus{code: 200, answer: vectorOfOne}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	p := &Prometheus{Clients: &HTTPClients{}, Secrets: secrets(map[string]string{"shop/prom/token": "s3cret\n"})}
	spec := &analysisv1alpha1.PrometheusMetric{Address: srv.URL + "/prom/", Query: `sum(rate(errors{service="web"}[1m]))`,
		BearerTokenSecretRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "prom"}, Key: "token"}}
	o, err := p.Measure(context.Background(), promRequest(spec))
	if err != nil || !o.Done || o.Value != 0.012 {
		t.Fatalf("Measure = %+v, %v", o, err)
	}
	r := fake.last()
	if r.URL.Path != "/prom/api/v1/query" || r.Form.Get("query") != spec.Query || r.Form.Get("time") != "1796464800" {
		t.Errorf("request %s %v", r.URL.Path, r.Form)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer s3cret" {
		t.Errorf("Authorization %q", got)
	}
}

func TestPrometheusRangeQuery(t *testing.T) {
	fake := &fakePrometheus{code: 200, answer: `{"status":"success","data":{"resultType":"matrix","result":[` +
		`{"metric":{"pod":"a"},"values":[[1796464200,"0.01"],[1796464500,"0.02"]]},{"metric":{"pod":"b"},"values":[[1796464500,"0.5"]]}]}}`}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	p := &Prometheus{Clients: &HTTPClients{}, Secrets: secrets(nil)}
	spec := &analysisv1alpha1.PrometheusMetric{Address: srv.URL, Query: "rate(errors[1m])", Range: &analysisv1alpha1.PrometheusRange{
		Start: metav1.Duration{Duration: 10 * time.Minute}, End: &metav1.Duration{Duration: time.Minute}, Step: metav1.Duration{Duration: 90 * time.Second}}}
	o, err := p.Measure(context.Background(), promRequest(spec))
	if err != nil || !reflect.DeepEqual(o.Value, []any{0.01, 0.02, 0.5}) {
		t.Fatalf("Measure = %+v, %v", o, err)
	}
	r := fake.last()
	if r.URL.Path != "/api/v1/query_range" || r.Form.Get("start") != "1796464200" || r.Form.Get("end") != "1796464740" || r.Form.Get("step") != "90" {
		t.Errorf("request %s %v", r.URL.Path, r.Form)
	}
}

func TestPrometheusErrors(t *testing.T) {
	fake := &fakePrometheus{}
	srv := httptest.NewServer(fake)
	p := &Prometheus{Clients: &HTTPClients{}, Secrets: secrets(nil)}
	spec := &analysisv1alpha1.PrometheusMetric{Address: srv.URL, Query: "up{"}
	fake.set(400, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:4: parse error: unexpected end of input"}`)
	if _, err := p.Measure(context.Background(), promRequest(spec)); err == nil ||
		err.Error() != `prometheus answered 400: bad_data: invalid parameter "query": 1:4: parse error: unexpected end of input` {
		t.Errorf("bad query: %v", err)
	}
	spec.BearerTokenSecretRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Key: "token"}
	if _, err := p.Measure(context.Background(), promRequest(spec)); err == nil || !strings.HasPrefix(err.Error(), "reading the bearer token: ") {
		t.Errorf("missing token: %v", err)
	}
	spec.BearerTokenSecretRef = nil
	srv.Close()
	spec.Query = "up"
	if _, err := p.Measure(context.Background(), promRequest(spec)); err == nil || strings.Contains(err.Error(), srv.URL) ||
		!strings.Contains(err.Error(), "connection refused") {
		t.Errorf("server down (the error names no URL): %v", err)
	}
}

func TestPrometheusTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	p := &Prometheus{Clients: &HTTPClients{}, Secrets: secrets(nil)}
	spec := &analysisv1alpha1.PrometheusMetric{Address: srv.URL, Query: "up", Timeout: &metav1.Duration{Duration: 100 * time.Millisecond}}
	start := time.Now()
	_, err := p.Measure(context.Background(), promRequest(spec))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("a query past its timeout: %v after %v", err, time.Since(start))
	}
}

// An https server is trusted through the CA bundle the metric names, and refused without it.
func TestPrometheusTLS(t *testing.T) {
	srv := httptest.NewTLSServer(&fakePrometheus{code: 200, answer: vectorOfOne})
	defer srv.Close()
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	p := &Prometheus{Clients: &HTTPClients{}, Secrets: secrets(map[string]string{"shop/prom-ca/ca.crt": ca, "shop/other/ca.crt": "not PEM"})}
	spec := &analysisv1alpha1.PrometheusMetric{Address: srv.URL, Query: "up"}
	if _, err := p.Measure(context.Background(), promRequest(spec)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an unknown CA accepted: %v", err)
	}
	spec.TLS = &analysisv1alpha1.TLSConfig{CASecretRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "prom-ca"}, Key: "ca.crt"}}
	if o, err := p.Measure(context.Background(), promRequest(spec)); err != nil || o.Value != 0.012 {
		t.Errorf("with the CA: %+v %v", o, err)
	}
	spec.TLS = &analysisv1alpha1.TLSConfig{InsecureSkipVerify: true}
	if _, err := p.Measure(context.Background(), promRequest(spec)); err != nil {
		t.Errorf("insecureSkipVerify: %v", err)
	}
	spec.TLS = &analysisv1alpha1.TLSConfig{CASecretRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}, Key: "ca.crt"}}
	if _, err := p.Measure(context.Background(), promRequest(spec)); err == nil || err.Error() != "the CA bundle holds no PEM certificate" {
		t.Errorf("a bundle without certificates: %v", err)
	}
}

func TestParsePrometheus(t *testing.T) {
	cases := []struct {
		name   string
		code   int
		body   string
		want   any
		errMsg string
	}{
		{name: "scalar", body: `{"status":"success","data":{"resultType":"scalar","result":[1796464800,"42"]}}`, want: 42.0},
		{name: "string", body: `{"status":"success","data":{"resultType":"string","result":[1796464800,"green"]}}`, want: "green"},
		{name: "vector of one", body: vectorOfOne, want: 0.012},
		{name: "vector of several", body: `{"status":"success","data":{"resultType":"vector","result":[` +
			`{"metric":{"pod":"a"},"value":[1796464800,"1"]},{"metric":{"pod":"b"},"value":[1796464800,"+Inf"]}]}}`, want: []any{1.0, math.Inf(1)}},
		{name: "empty vector", body: `{"status":"success","data":{"resultType":"vector","result":[]}}`, want: []any{}},
		{name: "matrix of one point", body: `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1796464800,"3"]]}]}}`, want: 3.0},
		{name: "warnings are ignored", body: `{"status":"success","warnings":["partial"],"data":{"resultType":"scalar","result":[1,"1"]}}`, want: 1.0},
		{name: "error answer", code: 422, body: `{"status":"error","errorType":"execution","error":"query timed out"}`,
			errMsg: "prometheus answered 422: execution: query timed out"},
		{name: "not JSON", code: 502, body: `<html>Bad Gateway</html>`, errMsg: "prometheus answered 502: <html>Bad Gateway</html>"},
		{name: "not a number", body: `{"status":"success","data":{"resultType":"scalar","result":[1,"x"]}}`,
			errMsg: `reading prometheus's scalar: a sample value "x" that is not a number`},
		{name: "unknown type", body: `{"status":"success","data":{"resultType":"histogram","result":[]}}`,
			errMsg: `reading prometheus's histogram: unknown result type "histogram"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParsePrometheus(c.code, []byte(c.body))
			if c.errMsg != "" {
				if err == nil || err.Error() != c.errMsg {
					t.Errorf("error %v, want %s", err, c.errMsg)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("ParsePrometheus = %#v, %v; want %#v", got, err, c.want)
			}
		})
	}
	if v, err := ParsePrometheus(200, []byte(`{"status":"success","data":{"resultType":"scalar","result":[1,"NaN"]}}`)); err != nil || !math.IsNaN(v.(float64)) {
		t.Errorf("NaN: %v %v", v, err)
	}
}

func TestQueryURLRefusesOtherSchemes(t *testing.T) {
	for _, addr := range []string{"prometheus:9090", "file:///etc/passwd", "http://"} {
		if _, err := queryURL(&analysisv1alpha1.PrometheusMetric{Address: addr, Query: "up"}, now); err == nil {
			t.Errorf("address %q accepted", addr)
		}
	}
	u, err := queryURL(&analysisv1alpha1.PrometheusMetric{Address: "https://p.example/sub", Query: "a b"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if parsed, _ := url.Parse(u); parsed.Path != "/sub/api/v1/query" || parsed.Query().Get("query") != "a b" {
		t.Errorf("url %s", u)
	}
}
