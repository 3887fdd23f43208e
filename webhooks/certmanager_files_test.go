package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	cwmetrics "sigs.k8s.io/controller-runtime/pkg/certwatcher/metrics"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestWriteServingFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	// What a write interrupted before its sweep leaves: the next write removes it.
	for _, stale := range []string{pairPrefix + "interrupted", linkPrefix + "interrupted"} {
		if err := os.MkdirAll(filepath.Join(dir, stale), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	first, second := mustBundle(t, t0, testCfg), mustBundle(t, t0, testCfg)
	steps := []struct {
		b           Bundle
		wantChanged bool
	}{
		{b: first, wantChanged: true},
		{b: first, wantChanged: false},
		{b: second, wantChanged: true},
	}
	for i, s := range steps {
		changed, err := writeServingFiles(dir, DefaultCertName, DefaultKeyName, s.b)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if changed != s.wantChanged {
			t.Errorf("step %d: changed = %v, want %v", i, changed, s.wantChanged)
		}
		assertFile(t, filepath.Join(dir, DefaultCertName), s.b.Cert, 0o644)
		assertFile(t, filepath.Join(dir, DefaultKeyName), s.b.Key, 0o600)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 4 {
		t.Errorf("cert dir holds %d entries (%v), want the two links, %s and the one pair", len(entries), err, dataLink)
	}
}

// TestRotationSeenByCertWatcher rotates the pair under controller-runtime's certificate watcher, as the manager's
// webhook server runs it: every read it makes must find a matching pair, and it must end on the last one.
func TestRotationSeenByCertWatcher(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, DefaultCertName), filepath.Join(dir, DefaultKeyName)
	if _, err := writeServingFiles(dir, DefaultCertName, DefaultKeyName, mustBundle(t, t0, testCfg)); err != nil {
		t.Fatal(err)
	}
	cw, err := certwatcher.New(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = cw.Start(ctx) }()
	errorsBefore := testutil.ToFloat64(cwmetrics.ReadCertificateErrors)
	var last Bundle
	for range 5 {
		time.Sleep(200 * time.Millisecond) // the watches are added once Start runs
		last = mustBundle(t, t0, testCfg)
		if _, err := writeServingFiles(dir, DefaultCertName, DefaultKeyName, last); err != nil {
			t.Fatal(err)
		}
	}
	want, err := tls.X509KeyPair(last.Cert, last.Key)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !servesCert(cw, want) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !servesCert(cw, want) {
		t.Error("the watcher never loaded the last pair")
	}
	if n := testutil.ToFloat64(cwmetrics.ReadCertificateErrors) - errorsBefore; n != 0 {
		t.Errorf("the watcher failed %v reads during the rotations, want none", n)
	}
}

func servesCert(cw *certwatcher.CertWatcher, want tls.Certificate) bool {
	got, _ := cw.GetCertificate(nil)
	return got != nil && bytes.Equal(got.Certificate[0], want.Certificate[0])
}

func assertFile(t *testing.T, path string, want []byte, mode os.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s: content differs (err %v)", path, err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != mode {
		t.Errorf("%s: mode %v, want %v (err %v)", path, info.Mode().Perm(), mode, err)
	}
}

func TestEnsurePlaceholderFiles(t *testing.T) {
	dir := t.TempDir()
	cm, err := NewCertManager(Options{
		Namespace: "ns", SecretName: "s", ServiceName: "svc", CertDir: dir,
		Client: fake.NewClientBuilder().Build(), Clock: clocktesting.NewFakeClock(time.Now()),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cm.ensurePlaceholderFiles(); err != nil {
		t.Fatalf("placeholder: %v", err)
	}
	certPath, keyPath := filepath.Join(dir, DefaultCertName), filepath.Join(dir, DefaultKeyName)
	if _, err := tls.LoadX509KeyPair(certPath, keyPath); err != nil {
		t.Fatalf("placeholder is not a usable pair: %v", err)
	}
	before, _ := os.ReadFile(certPath)
	if err := cm.ensurePlaceholderFiles(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(certPath); !bytes.Equal(before, after) {
		t.Error("a usable pair was replaced")
	}
	if err := cm.Ready(); err == nil {
		t.Error("ready before any sync")
	}
}
