// Package prometheus runs a real Prometheus server for tests: Debian's `prometheus` package, which the
// Makefile installs where it can (root with apt-get), on a loopback port with a generated configuration that
// scrapes the targets a test serves.
package prometheus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RequiredEnv set to "required" (the Makefile sets it where it installs the package) turns a missing
// prometheus binary from a skip into a failure, so CI cannot pass without the real server.
const RequiredEnv = "FLOTILLA_REAL_PROMETHEUS"

// ScrapeInterval is how often the server scrapes its targets.
const ScrapeInterval = time.Second

// Start runs Prometheus scraping targets ("host:port", path /metrics) until the test ends and returns its
// URL. Without the binary the test is skipped, saying why, unless RequiredEnv is "required".
func Start(t testing.TB, targets ...string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		missing(t)
	}
	s, err := Run(bin, t.TempDir(), targets...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s.URL
}

// Server is a running Prometheus, for a caller that is not a test (the benchmark harness).
type Server struct {
	// URL is where it answers: http://127.0.0.1:<port>.
	URL string
	cmd *exec.Cmd
	log *os.File
}

// Run starts bin (Debian's prometheus) with its configuration, data and log in dir, scraping targets each
// ScrapeInterval, and returns once it is ready; Stop ends it. On error nothing is left running.
func Run(bin, dir string, targets ...string) (*Server, error) {
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte(Config(targets)), 0o600); err != nil {
		return nil, err
	}
	addr, err := freeAddress()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + addr, log: log}
	s.cmd = exec.Command(bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting prometheus: %w", err)
	}
	if err := waitReady(s.URL, 30*time.Second); err != nil {
		s.Stop()
		out, _ := os.ReadFile(log.Name())
		return nil, fmt.Errorf("prometheus at %s: %w\n%s", s.URL, err, out)
	}
	return s, nil
}

// PID is the server's process.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop ends the server and waits for it.
func (s *Server) Stop() {
	stop(s.cmd)
	_ = s.log.Close()
}

func missing(t testing.TB) {
	t.Helper()
	msg := "prometheus is not installed (as root on Debian or Ubuntu, make installs the package prometheus)"
	if os.Getenv(RequiredEnv) == "required" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Config is the server's configuration: every target scraped each ScrapeInterval.
func Config(targets []string) string {
	quoted := make([]string, len(targets))
	for i, target := range targets {
		quoted[i] = fmt.Sprintf("%q", target)
	}
	return fmt.Sprintf(`global:
  scrape_interval: %[1]s
  evaluation_interval: %[1]s
scrape_configs:
- job_name: test
  static_configs:
  - targets: [%[2]s]
`, ScrapeInterval, strings.Join(quoted, ", "))
}

// freeAddress is a loopback address no one listens on now.
func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitReady(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/-/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("not ready in time")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop ends the server and waits for it.
func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// WaitFor waits until the instant query's answer holds want (as Prometheus prints the sample value): the
// server has scraped what the test serves.
func WaitFor(t testing.TB, url, query, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Await(ctx, url, query, want); err != nil {
		t.Fatal(err)
	}
}

// Await polls the instant query until its answer holds want (as Prometheus prints the sample value) or ctx
// ends; the error quotes the last answer.
func Await(ctx context.Context, url, query, want string) error {
	var last string
	for {
		last = instant(ctx, url, query)
		if strings.Contains(last, fmt.Sprintf("%q]", want)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("prometheus never answered %s with %s; last answer: %s", query, want, last)
		case <-time.After(ScrapeInterval / 4):
		}
	}
}

func instant(ctx context.Context, url, query string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/v1/query?query="+neturl.QueryEscape(query), nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return b.String()
}
