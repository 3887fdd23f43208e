package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"k8s.io/client-go/util/jsonpath"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/plan"
)

// Web measures a value in an HTTP endpoint's answer: the metric's GET or POST, a 2xx answer required.
//
// The result conditions read: the answer decoded as JSON (objects as maps, arrays as lists, numbers as
// doubles), or, with a jsonPath, what the path selects in it: the one value it matches, or the list of them
// when it matches several. Without a jsonPath an answer that is not JSON is a string.
type Web struct {
	Clients *HTTPClients
	Secrets SecretFunc
}

// Measure sends the metric's request.
func (w *Web) Measure(ctx context.Context, req Request) (plan.Observation, error) {
	spec := req.Metric.Provider.Web
	c, err := w.Clients.forMetric(ctx, w.Secrets, req.Run.Namespace, spec.TLS)
	if err != nil {
		return plan.Observation{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout(spec.Timeout))
	defer cancel()
	hreq, err := newWebRequest(ctx, spec)
	if err != nil {
		return plan.Observation{}, err
	}
	code, body, err := do(c, hreq)
	if err != nil {
		return plan.Observation{}, err
	}
	if code < 200 || code > 299 {
		return plan.Observation{}, fmt.Errorf("answered %d %s: %s", code, http.StatusText(code), snippet(body))
	}
	v, err := ExtractJSON(body, spec.JSONPath)
	return plan.Observation{Done: true, Value: v}, err
}

func newWebRequest(ctx context.Context, spec *analysisv1alpha1.WebMetric) (*http.Request, error) {
	method, body := http.MethodGet, io.Reader(nil)
	if spec.Method == analysisv1alpha1.WebMethodPost {
		method, body = http.MethodPost, strings.NewReader(spec.Body)
	}
	hreq, err := http.NewRequestWithContext(ctx, method, spec.URL, body)
	if err != nil {
		// The URL is left out: an argument read from a Secret may be part of it.
		return nil, fmt.Errorf("the web metric's url or method is not valid")
	}
	if hreq.URL.Scheme != "http" && hreq.URL.Scheme != "https" {
		return nil, fmt.Errorf("the web metric's url is not an http or https URL")
	}
	hreq.Header.Set("Accept", "application/json")
	if method == http.MethodPost {
		hreq.Header.Set("Content-Type", "application/json")
	}
	for _, h := range spec.Headers {
		hreq.Header.Set(h.Name, h.Value)
	}
	return hreq, nil
}

// ExtractJSON reads an answer's body and selects the result with path (kubectl's JSONPath syntax; empty: the
// whole answer).
func ExtractJSON(body []byte, path string) (any, error) {
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		if path == "" {
			return string(bytes.TrimSpace(body)), nil
		}
		return nil, fmt.Errorf("the answer is not JSON: %s", snippet(body))
	}
	if path == "" {
		return doc, nil
	}
	jp := jsonpath.New("jsonPath")
	if err := jp.Parse(path); err != nil {
		return nil, fmt.Errorf("jsonPath %s: %w", path, err)
	}
	results, err := jp.FindResults(doc)
	if err != nil {
		return nil, fmt.Errorf("jsonPath %s: %w", path, err)
	}
	var values []any
	for _, r := range results {
		for _, v := range r {
			if !v.IsValid() || !v.CanInterface() {
				values = append(values, nil) // a JSON null
				continue
			}
			values = append(values, v.Interface())
		}
	}
	switch len(values) {
	case 0:
		return nil, fmt.Errorf("jsonPath %s matches nothing in the answer", path)
	case 1:
		return values[0], nil
	}
	return values, nil
}
