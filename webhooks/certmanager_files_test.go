package webhooks

import (
	"bytes"
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestWriteServingFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
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
	if err != nil || len(entries) != 2 {
		t.Errorf("cert dir holds %d entries (%v), want only the two files", len(entries), err)
	}
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
