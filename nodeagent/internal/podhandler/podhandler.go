// Package podhandler runs a container's network handlers the way the kubelet does, for the agent's preStop
// hooks and probes: an httpGet or tcpSocket action against its host or the pod's IP, its port a number or the
// name of one of the container's ports.
package podhandler

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NewHTTPClient is the client of httpGet handlers. Like the kubelet's, it does not verify the pod's certificate
// (pods commonly serve self-signed ones), keeps no connection between calls, and follows redirects only to the
// same host.
func NewHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet's handlers
			DisableKeepAlives: true,
		},
		CheckRedirect: sameHostRedirects,
	}
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

// Get sends an httpGet action's request; the caller reads and closes the answer.
func Get(ctx context.Context, c *http.Client, h *corev1.HTTPGetAction, ports []corev1.ContainerPort, podIP string) (*http.Response, error) {
	u, err := URL(h, ports, podIP)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "flotilla-nodeagent")
	for _, hd := range h.HTTPHeaders {
		if strings.EqualFold(hd.Name, "Host") {
			req.Host = hd.Value
		} else {
			req.Header.Add(hd.Name, hd.Value)
		}
	}
	return c.Do(req)
}

// Dial opens and closes a connection to a tcpSocket action's address.
func Dial(ctx context.Context, h *corev1.TCPSocketAction, ports []corev1.ContainerPort, podIP string) error {
	host, err := Host(h.Host, podIP)
	if err != nil {
		return err
	}
	port, err := Port(h.Port, ports)
	if err != nil {
		return err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return conn.Close()
}

// URL is the address an httpGet action calls: its host or the pod's IP, its port, its scheme and path.
func URL(h *corev1.HTTPGetAction, ports []corev1.ContainerPort, podIP string) (*url.URL, error) {
	host, err := Host(h.Host, podIP)
	if err != nil {
		return nil, err
	}
	port, err := Port(h.Port, ports)
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

// Host is an action's host, else the pod's IP.
func Host(host, podIP string) (string, error) {
	if host != "" {
		return host, nil
	}
	if podIP == "" {
		return "", errors.New("the pod has no IP")
	}
	return podIP, nil
}

// Port turns an action's port (a number, or the name of one of the container's ports) into a number.
func Port(p intstr.IntOrString, ports []corev1.ContainerPort) (int, error) {
	if p.Type == intstr.Int {
		return valid(int(p.IntVal))
	}
	for _, cp := range ports {
		if cp.Name == p.StrVal {
			return valid(int(cp.ContainerPort))
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return valid(n)
	}
	return 0, fmt.Errorf("no container port named %q", p.StrVal)
}

func valid(n int) (int, error) {
	if n <= 0 || n > 65535 {
		return 0, fmt.Errorf("invalid port %d", n)
	}
	return n, nil
}
