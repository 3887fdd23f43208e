package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// pollInterval paces every readiness poll: short, startup time matters.
const pollInterval = 50 * time.Millisecond

// freePort asks the kernel for an unused loopback port. Another process may
// take it before the child binds it; callers retry on "address already in
// use".
func freePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// FreePorts returns n distinct loopback ports that were free a moment ago.
// All listeners stay open until every port is chosen, so no two are equal.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitHealthy polls url until it answers 200, the process exits or ctx ends.
func waitHealthy(ctx context.Context, p *process, url string, client *http.Client) error {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		if healthy(ctx, url, client) {
			return nil
		}
		if err := p.exitError(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy at %s: %w (log: %s)", p.name, url, ctx.Err(), p.logPath)
		case <-ticker.C:
		}
	}
}

func healthy(ctx context.Context, url string, client *http.Client) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body) // let the connection be reused
	return resp.StatusCode == http.StatusOK
}

// insecureClient probes components whose serving certificates are
// self-signed at startup (controller-manager, scheduler).
func insecureClient() *http.Client {
	return &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
}

// portInUse reports whether a process that exited failed to bind its port.
func portInUse(p *process) bool {
	if p.running() {
		return false
	}
	data, err := os.ReadFile(p.logPath)
	return err == nil && strings.Contains(string(data), "address already in use")
}
