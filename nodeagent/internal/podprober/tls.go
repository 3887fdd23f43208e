package podprober

import "crypto/tls"

// insecureTLS is the TLS of httpGet probes with scheme HTTPS: the kubelet does not verify a probe's
// certificate, so a pod's self-signed one passes as it does for its readiness probe.
func insecureTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // probes, like the kubelet's, do not verify
}
