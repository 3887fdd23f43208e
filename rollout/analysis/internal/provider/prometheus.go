package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/plan"
)

// Prometheus measures a PromQL query through a Prometheus server's HTTP API: an instant query
// (/api/v1/query at the measurement's time) or a range query (/api/v1/query_range).
//
// The result conditions read: every sample of the answer, in the order Prometheus gives them (series by
// series, each series oldest first), as a number; `result` is that number when the answer holds exactly one
// sample (a scalar, a vector of one series, a range of one point), and the list of them otherwise (an empty
// list when nothing matched). NaN and ±Inf are numbers too. A string answer is a string.
type Prometheus struct {
	Clients *HTTPClients
	Secrets SecretFunc
}

// Measure sends the metric's query.
func (p *Prometheus) Measure(ctx context.Context, req Request) (plan.Observation, error) {
	spec := req.Metric.Provider.Prometheus
	u, err := queryURL(spec, req.Now)
	if err != nil {
		return plan.Observation{}, err
	}
	c, err := p.Clients.forMetric(ctx, p.Secrets, req.Run.Namespace, spec.TLS)
	if err != nil {
		return plan.Observation{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout(spec.Timeout))
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return plan.Observation{}, err
	}
	if ref := spec.BearerTokenSecretRef; ref != nil {
		token, err := p.Secrets(ctx, req.Run.Namespace, ref)
		if err != nil {
			return plan.Observation{}, fmt.Errorf("reading the bearer token: %w", err)
		}
		hreq.Header.Set("Authorization", "Bearer "+string(bytes.TrimSpace(token)))
	}
	code, body, err := do(c, hreq)
	if err != nil {
		return plan.Observation{}, err
	}
	v, err := ParsePrometheus(code, body)
	return plan.Observation{Done: true, Value: v}, err
}

// queryURL is the query's URL under the server's address (which may carry a path prefix).
func queryURL(spec *analysisv1alpha1.PrometheusMetric, now time.Time) (string, error) {
	base, err := url.Parse(spec.Address)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return "", errors.New("the Prometheus address is not an absolute http or https URL")
	}
	q := url.Values{"query": {spec.Query}}
	if r := spec.Range; r != nil {
		var end time.Duration
		if r.End != nil {
			end = r.End.Duration
		}
		q.Set("start", unixSeconds(now.Add(-r.Start.Duration)))
		q.Set("end", unixSeconds(now.Add(-end)))
		q.Set("step", strconv.FormatFloat(r.Step.Seconds(), 'f', -1, 64))
		base = base.JoinPath("api/v1/query_range")
	} else {
		q.Set("time", unixSeconds(now))
		base = base.JoinPath("api/v1/query")
	}
	base.RawQuery = q.Encode()
	return base.String(), nil
}

func unixSeconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64)
}

// promAnswer is the envelope of every Prometheus HTTP API answer.
type promAnswer struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// promSeries is one series of a vector (value) or a matrix (values).
type promSeries struct {
	Value  []any   `json:"value"`
	Values [][]any `json:"values"`
}

// ParsePrometheus reads a query's answer (HTTP status and body) into the value conditions read.
func ParsePrometheus(code int, body []byte) (any, error) {
	var a promAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("prometheus answered %d: %s", code, snippet(body))
	}
	if a.Status != "success" {
		return nil, fmt.Errorf("prometheus answered %d: %s: %s", code, a.ErrorType, a.Error)
	}
	var samples []any
	var err error
	switch a.Data.ResultType {
	case "scalar", "string":
		var pair []any
		if err = json.Unmarshal(a.Data.Result, &pair); err == nil {
			samples, err = sampleValues([][]any{pair}, a.Data.ResultType == "string")
		}
	case "vector", "matrix":
		samples, err = seriesValues(a.Data.Result)
	default:
		err = fmt.Errorf("unknown result type %q", a.Data.ResultType)
	}
	if err != nil {
		return nil, fmt.Errorf("reading prometheus's %s: %w", a.Data.ResultType, err)
	}
	if len(samples) == 1 {
		return samples[0], nil
	}
	return samples, nil
}

func seriesValues(raw json.RawMessage) ([]any, error) {
	var series []promSeries
	if err := json.Unmarshal(raw, &series); err != nil {
		return nil, err
	}
	samples := []any{}
	for _, s := range series {
		pairs := s.Values
		if s.Value != nil {
			pairs = [][]any{s.Value}
		}
		values, err := sampleValues(pairs, false)
		if err != nil {
			return nil, err
		}
		samples = append(samples, values...)
	}
	return samples, nil
}

// sampleValues reads [timestamp, "value"] pairs: numbers, or strings for a string result.
func sampleValues(pairs [][]any, asString bool) ([]any, error) {
	out := make([]any, 0, len(pairs))
	for _, pair := range pairs {
		if len(pair) != 2 {
			return nil, fmt.Errorf("a sample of %d fields", len(pair))
		}
		s, ok := pair[1].(string)
		if !ok {
			return nil, fmt.Errorf("a sample value %v that is not a string", pair[1])
		}
		if asString {
			out = append(out, s)
			continue
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("a sample value %q that is not a number", s)
		}
		out = append(out, f)
	}
	return out, nil
}
