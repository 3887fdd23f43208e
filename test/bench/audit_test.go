package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

func TestWithAudit(t *testing.T) {
	opts := cluster.Options{Args: map[string][]string{"kube-apiserver": {"--v=2"}, "kube-scheduler": {"--v=1"}}}
	t.Setenv("FLOTILLA_BENCH_AUDIT", "")
	if got, err := withAudit(opts, t.TempDir()); err != nil || !slices.Equal(got.Args["kube-apiserver"], []string{"--v=2"}) {
		t.Fatalf("without the variable: args %v, error %v", got.Args, err)
	}
	t.Setenv("FLOTILLA_BENCH_AUDIT", "1")
	dir := t.TempDir()
	got, err := withAudit(opts, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--v=2", "--audit-policy-file=" + filepath.Join(dir, "audit-policy.yaml"), "--audit-log-path=" + filepath.Join(dir, "audit.log")}
	if !slices.Equal(got.Args["kube-apiserver"], want) || !slices.Equal(opts.Args["kube-apiserver"], []string{"--v=2"}) {
		t.Errorf("apiserver args %v (the scenario's own: %v), want %v", got.Args["kube-apiserver"], opts.Args["kube-apiserver"], want)
	}
	policy, err := os.ReadFile(filepath.Join(dir, "audit-policy.yaml"))
	if err != nil || !strings.Contains(string(policy), cluster.ControllerUser) || !strings.HasSuffix(string(policy), "- level: None\n  verbs: [\"create\", \"update\", \"patch\", \"delete\"]\n") {
		t.Errorf("policy %q (error %v) does not name the manager's user or records other clients", policy, err)
	}
	t.Setenv("FLOTILLA_BENCH_AUDIT", "all")
	if _, err := withAudit(opts, dir); err != nil {
		t.Fatal(err)
	}
	policy, err = os.ReadFile(filepath.Join(dir, "audit-policy.yaml"))
	if err != nil || !strings.HasSuffix(string(policy), "- level: Metadata\n  verbs: [\"create\", \"update\", \"patch\", \"delete\"]\n") {
		t.Errorf("with all: policy %q (error %v) does not record the other clients' writes", policy, err)
	}
}
