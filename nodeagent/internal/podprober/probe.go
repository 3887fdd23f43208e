package podprober

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
)

// maxMessage bounds what a probe's output leaves in the status, as the kubelet bounds its probes' output.
const maxMessage = 1024

// Prober runs one probe once.
type Prober struct {
	Runtime cri.Runtime
	// HTTP sends httpGet probes; it must not follow redirects to other hosts (the kubelet's rule).
	HTTP *http.Client
}

// Run probes t once within timeout: exec through the runtime, httpGet and tcpSocket against the pod's IP.
func (p Prober) Run(ctx context.Context, t Target, timeout time.Duration) Outcome {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h := t.Probe.ProbeHandler
	switch {
	case h.Exec != nil:
		return p.exec(ctx, t, h.Exec.Command, timeout)
	case h.HTTPGet != nil:
		return p.httpGet(ctx, t, h.HTTPGet)
	case h.TCPSocket != nil:
		return tcpSocket(ctx, t, h.TCPSocket)
	default:
		return Outcome{Message: "the probe has no exec, httpGet or tcpSocket handler"}
	}
}

// exec runs the command in the newest running container of the probe's name; exit code 0 passes.
func (p Prober) exec(ctx context.Context, t Target, cmd []string, timeout time.Duration) Outcome {
	id, err := p.container(ctx, t)
	if err != nil {
		return Outcome{Message: err.Error()}
	}
	res, err := p.Runtime.ExecSync(ctx, id, cmd, timeout)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return Outcome{Message: fmt.Sprintf("command timed out after %s", timeout)}
	case err != nil:
		return Outcome{Message: err.Error()}
	}
	out := clip(string(bytes.TrimSpace(append(res.Stdout, res.Stderr...))))
	if res.ExitCode != 0 {
		return Outcome{Message: fmt.Sprintf("command exited with code %d: %s", res.ExitCode, out)}
	}
	return Outcome{Passed: true, Message: out}
}

// container is the ID of the running container the probe names.
func (p Prober) container(ctx context.Context, t Target) (string, error) {
	list, err := p.Runtime.ListContainers(ctx, map[string]string{cri.LabelPodUID: t.PodUID, cri.LabelContainerName: t.Container})
	if err != nil {
		return "", err
	}
	var newest *cri.Container
	for i := range list {
		if c := &list[i]; c.State == cri.StateRunning && (newest == nil || c.CreatedAt.After(newest.CreatedAt)) {
			newest = c
		}
	}
	if newest == nil {
		return "", fmt.Errorf("container %s of pod %s/%s is not running", t.Container, t.Namespace, t.Pod)
	}
	return newest.ID, nil
}

// httpGet passes on a status from 200 to 399, as the kubelet's.
func (p Prober) httpGet(ctx context.Context, t Target, g *corev1.HTTPGetAction) Outcome {
	u, err := probeURL(t, g)
	if err != nil {
		return Outcome{Message: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Outcome{Message: err.Error()}
	}
	req.Header.Set("User-Agent", "flotilla-nodeagent-probe")
	for _, h := range g.HTTPHeaders {
		req.Header.Set(h.Name, h.Value)
	}
	resp, err := p.HTTP.Do(req)
	if err != nil {
		return Outcome{Message: clip(err.Error())}
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxMessage))
	msg := clip(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body)))
	return Outcome{Passed: resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusBadRequest, Message: msg}
}

// probeURL is the URL of an httpGet probe: its host, else the pod's IP; a named port must have been resolved
// by the manager.
func probeURL(t Target, g *corev1.HTTPGetAction) (string, error) {
	port, err := portNumber(g.Port.String())
	if err != nil {
		return "", err
	}
	host := g.Host
	if host == "" {
		host = t.IP
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: g.Path}
	if i := strings.IndexByte(g.Path, '?'); i >= 0 {
		u.Path, u.RawQuery = g.Path[:i], g.Path[i+1:]
	}
	return u.String(), nil
}

// tcpSocket passes when a connection opens.
func tcpSocket(ctx context.Context, t Target, s *corev1.TCPSocketAction) Outcome {
	port, err := portNumber(s.Port.String())
	if err != nil {
		return Outcome{Message: err.Error()}
	}
	host := s.Host
	if host == "" {
		host = t.IP
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return Outcome{Message: clip(err.Error())}
	}
	_ = conn.Close()
	return Outcome{Passed: true}
}

func portNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not a port number", s)
	}
	return n, nil
}

func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage]
}

// NewHTTPClient is the client of httpGet probes: no keep-alive (each probe opens its own connection, as the
// kubelet's), TLS without verification (the kubelet does not verify a probe's certificate either), and
// redirects followed only to the same host.
func NewHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	tr.TLSClientConfig = insecureTLS()
	return &http.Client{Transport: tr, CheckRedirect: sameHostRedirects}
}

func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	return nil
}
