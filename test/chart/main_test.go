package chart

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

// cfg is nil with -short: the tests that need the control plane skip.
var cfg *rest.Config

var update = flag.Bool("update", false, "rewrite testdata/default.golden.yaml")

// TestMain starts a control plane with Flotilla's CRDs (the chart's crds/).
func TestMain(m *testing.M) {
	code := managertest.Main(m, cluster.Options{}, &cfg)
	for _, dir := range []string{managerBuild.dir, agentBuild.dir} {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

const (
	chartDir = "charts/flotilla"
	// kubeVersion is what `helm template` assumes; a helm built without release ldflags assumes v1.20, which
	// the chart's kubeVersion constraint rejects.
	kubeVersion = "v1.37.2"
)

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// binDir is where `make tools` puts helm: $FLOTILLA_BIN_DIR, else <repo>/bin (as test/cluster finds it).
func binDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("FLOTILLA_BIN_DIR"); dir != "" {
		return dir
	}
	return filepath.Join(repoRoot(t), "bin")
}

// runHelm runs bin/helm from the repository root with its state directories in a temporary directory.
func runHelm(t testing.TB, args ...string) ([]byte, error) {
	t.Helper()
	bin := filepath.Join(binDir(t), "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("helm: %v (run `make tools`, or set FLOTILLA_BIN_DIR)", err)
	}
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config",
		"HELM_DATA_HOME="+home+"/data")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// release is one `helm template` invocation: a release name, its namespace and value flags.
type release struct {
	name      string
	namespace string
	flags     []string
}

func defaultRelease(flags ...string) release {
	return release{name: "flotilla", namespace: "flotilla-system", flags: flags}
}

func (r release) templateArgs() []string {
	args := []string{"template", r.name, chartDir, "--namespace", r.namespace, "--kube-version", kubeVersion}
	return append(args, r.flags...)
}

// renderRaw returns helm's output for r, failing the test if helm fails.
func renderRaw(t testing.TB, r release) []byte {
	t.Helper()
	out, err := runHelm(t, r.templateArgs()...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func render(t testing.TB, r release) rendered {
	t.Helper()
	objs, err := decodeObjects(renderRaw(t, r))
	if err != nil {
		t.Fatal(err)
	}
	return rendered{rel: r, objs: objs}
}

// decodeObjects splits a multi-document YAML stream into objects, skipping empty documents.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding rendered objects: %w", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// typed converts an unstructured object into T.
func typed[T any](t testing.TB, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}
