package metrics

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

// ClientRequestsName counts the manager's requests to the API server. The
// benchmarks read it before and after a phase, so it is counted in the
// process itself, where no proxy or audit log is needed.
const ClientRequestsName = "flotilla_client_requests_total"

// InstrumentClient registers the request counter on reg and wraps cfg's
// transport so that every client built from cfg (or a copy made after this
// call) counts its requests by Kubernetes verb and resource.
func InstrumentClient(cfg *rest.Config, reg prometheus.Registerer) error {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ClientRequestsName,
		Help: "Requests flotilla-manager sent to the Kubernetes API server, by Kubernetes verb and resource.",
	}, []string{"verb", "resource"})
	if err := reg.Register(requests); err != nil {
		return fmt.Errorf("registering %s: %w", ClientRequestsName, err)
	}
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return &countingTransport{next: next, requests: requests}
	})
	return nil
}

// countingTransport counts each request as it is sent, retries included:
// a retry costs the API server as much as the first attempt.
type countingTransport struct {
	next     http.RoundTripper
	requests *prometheus.CounterVec
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	verb, resource := Classify(req.Method, req.URL)
	t.requests.WithLabelValues(verb, resource).Inc()
	return t.next.RoundTrip(req)
}

// WrappedRoundTripper lets client-go reach the transport underneath (it
// does so to cancel requests and close idle connections).
func (t *countingTransport) WrappedRoundTripper() http.RoundTripper { return t.next }
