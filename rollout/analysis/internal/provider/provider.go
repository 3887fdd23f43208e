// Package provider takes the measurements of the AnalysisRun controller: a PromQL query against a Prometheus
// server's HTTP API, an HTTP request whose JSON answer holds the value, or a Job whose outcome is the verdict.
// Each provider returns what it saw as a plan.Observation; judging it is the planner's.
package provider

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/plan"
)

// Request is one measurement to take or, for a measurement in flight, to look at again.
type Request struct {
	// Run is the AnalysisRun measured: its namespace holds the Secrets the metric names, and it owns Jobs.
	Run *analysisv1alpha1.AnalysisRun
	// Metric is the metric, its arguments already substituted.
	Metric *analysisv1alpha1.Metric
	// Index is the measurement's number within the metric.
	Index int32
	// Now is the time of the measurement: a Prometheus query's evaluation time.
	Now time.Time
	// InFlight is the metadata of the measurement in flight being resumed; nil for a new measurement.
	InFlight map[string]string
}

// Provider takes measurements of one kind.
type Provider interface {
	Measure(ctx context.Context, req Request) (plan.Observation, error)
}

// Terminator is a provider whose measurements in flight must be stopped when their run is terminated.
type Terminator interface {
	Terminate(ctx context.Context, req Request) error
}

// SecretFunc reads a key of a Secret of namespace; the controller reads it from the API server, not a cache of
// every Secret.
type SecretFunc func(ctx context.Context, namespace string, ref *corev1.SecretKeySelector) ([]byte, error)

// DefaultTimeout bounds one HTTP measurement whose metric sets no timeout.
const DefaultTimeout = 30 * time.Second

// maxBody bounds the answer an HTTP measurement reads.
const maxBody = 10 << 20

// maxClients bounds the HTTP clients kept, one per distinct TLS configuration; past it they start over.
const maxClients = 64

// HTTPClients keeps one HTTP client per TLS configuration, so that measurements reuse connections.
type HTTPClients struct {
	mu      sync.Mutex
	clients map[string]*http.Client
}

// For is the client for a TLS configuration whose CA bundle (if any) has been read as ca.
func (h *HTTPClients) For(cfg *analysisv1alpha1.TLSConfig, ca []byte) (*http.Client, error) {
	insecure := cfg != nil && cfg.InsecureSkipVerify
	sum := sha256.Sum256(ca)
	key := fmt.Sprintf("%t/%s", insecure, hex.EncodeToString(sum[:]))
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.clients[key]; ok {
		return c, nil
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure}
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("the CA bundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	if h.clients == nil || len(h.clients) >= maxClients {
		h.clients = map[string]*http.Client{}
	}
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tlsConfig,
		ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}}
	h.clients[key] = c
	return c, nil
}

// forMetric is the HTTP client for a metric's TLS configuration, reading its CA bundle from the run's namespace.
func (h *HTTPClients) forMetric(ctx context.Context, secrets SecretFunc, ns string, cfg *analysisv1alpha1.TLSConfig) (*http.Client, error) {
	var ca []byte
	if cfg != nil && cfg.CASecretRef != nil {
		var err error
		if ca, err = secrets(ctx, ns, cfg.CASecretRef); err != nil {
			return nil, fmt.Errorf("reading the CA bundle: %w", err)
		}
	}
	return h.For(cfg, ca)
}

// do sends req and reads the answer's status and body (at most maxBody). Errors leave the URL out: it may
// hold an argument read from a Secret.
func do(c *http.Client, req *http.Request) (int, []byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			return 0, nil, fmt.Errorf("%s: %w", uerr.Op, uerr.Err)
		}
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return resp.StatusCode, body, nil
}

// timeout is a metric's timeout, or DefaultTimeout.
func timeout(d *metav1.Duration) time.Duration {
	if d != nil && d.Duration > 0 {
		return d.Duration
	}
	return DefaultTimeout
}

// snippet is the start of an answer, for an error message.
func snippet(body []byte) string {
	const n = 200
	if len(body) > n {
		return string(body[:n]) + "..."
	}
	return string(body)
}
