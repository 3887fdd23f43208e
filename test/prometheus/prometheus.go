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
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte(Config(targets)), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, err := freeAddress()
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + addr
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting prometheus: %v", err)
	}
	t.Cleanup(func() { stop(cmd); _ = log.Close() })
	if err := waitReady(url, 30*time.Second); err != nil {
		out, _ := os.ReadFile(log.Name())
		t.Fatalf("prometheus at %s: %v\n%s", url, err, out)
	}
	return url
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
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		last = instant(url, query)
		if strings.Contains(last, fmt.Sprintf("%q]", want)) {
			return
		}
		time.Sleep(ScrapeInterval / 4)
	}
	t.Fatalf("prometheus never answered %s with %s; last answer: %s", query, want, last)
}

func instant(url, query string) string {
	resp, err := http.Get(url + "/api/v1/query?query=" + query) //nolint:noctx // a test helper polling its own server
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return b.String()
}
