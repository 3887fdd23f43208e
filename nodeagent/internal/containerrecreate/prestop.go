package containerrecreate

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// maxHookOutput bounds how much of a failed hook's output goes into an event.
const maxHookOutput = 256

// newHookClient is the HTTP client for httpGet handlers. Like the kubelet's, it does not verify the pod's
// certificate (pods commonly serve self-signed ones) and keeps no connections between hooks.
func newHookClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
		DisableKeepAlives: true,
	}}
}

// runPreStop runs a container's preStop handler against the container (exec) or the pod's IP (httpGet,
// tcpSocket) and waits at most timeout for it.
func (r *Reconciler) runPreStop(ctx context.Context, spec *kruiseappsv1alpha1.ContainerRecreateRequestContainer, podIP, containerID string, timeout time.Duration) error {
	h := spec.PreStop
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case h.Exec != nil:
		return r.execHook(ctx, containerID, h.Exec.Command, timeout)
	case h.HTTPGet != nil:
		return r.httpHook(ctx, h.HTTPGet, spec.Ports, podIP)
	case h.TCPSocket != nil:
		return tcpHook(ctx, h.TCPSocket, spec.Ports, podIP)
	}
	return nil
}

func (r *Reconciler) execHook(ctx context.Context, containerID string, cmd []string, timeout time.Duration) error {
	res, err := r.Runtime.ExecSync(ctx, containerID, cmd, timeout)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("command %q exited with %d: %s", cmd, res.ExitCode, clip(string(res.Stdout)+string(res.Stderr)))
	}
	return nil
}

func (r *Reconciler) httpHook(ctx context.Context, h *corev1.HTTPGetAction, ports []corev1.ContainerPort, podIP string) error {
	u, err := hookURL(h, ports, podIP)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("building preStop request: %w", err)
	}
	for _, hd := range h.HTTPHeaders {
		if strings.EqualFold(hd.Name, "Host") {
			req.Host = hd.Value
		} else {
			req.Header.Add(hd.Name, hd.Value)
		}
	}
	resp, err := r.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("preStop GET %s: %w", u, err)
	}
	// As for the kubelet, any answer means the hook ran.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return resp.Body.Close()
}

func tcpHook(ctx context.Context, h *corev1.TCPSocketAction, ports []corev1.ContainerPort, podIP string) error {
	host, err := hookHost(h.Host, podIP)
	if err != nil {
		return err
	}
	port, err := resolvePort(h.Port, ports)
	if err != nil {
		return err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("preStop tcpSocket: %w", err)
	}
	return conn.Close()
}

// hookURL is the address an httpGet handler calls: its host or the pod's IP, its port (named ports are the
// container's), its scheme and path.
func hookURL(h *corev1.HTTPGetAction, ports []corev1.ContainerPort, podIP string) (*url.URL, error) {
	host, err := hookHost(h.Host, podIP)
	if err != nil {
		return nil, err
	}
	port, err := resolvePort(h.Port, ports)
	if err != nil {
		return nil, err
	}
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path, query, _ := strings.Cut(h.Path, "?")
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: path, RawQuery: query}, nil
}

func hookHost(host, podIP string) (string, error) {
	if host != "" {
		return host, nil
	}
	if podIP == "" {
		return "", fmt.Errorf("the pod has no IP for the preStop handler")
	}
	return podIP, nil
}

// resolvePort turns a handler's port (a number, or the name of one of the container's ports) into a number.
func resolvePort(p intstr.IntOrString, ports []corev1.ContainerPort) (int, error) {
	if p.Type == intstr.Int {
		return validPort(int(p.IntVal))
	}
	for _, cp := range ports {
		if cp.Name == p.StrVal {
			return validPort(int(cp.ContainerPort))
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return validPort(n)
	}
	return 0, fmt.Errorf("no container port named %q", p.StrVal)
}

func validPort(n int) (int, error) {
	if n <= 0 || n > 65535 {
		return 0, fmt.Errorf("invalid port %d", n)
	}
	return n, nil
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxHookOutput {
		return s[:maxHookOutput] + "..."
	}
	return s
}
