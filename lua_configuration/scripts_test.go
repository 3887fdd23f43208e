package luaconfiguration

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/trafficrouting/luavm"
)

// scriptCase is one testdata file: the obj a script receives and the value it must return.
type scriptCase struct {
	Input    any `json:"input"`
	Expected any `json:"expected"`
}

// TestScripts runs every testdata case against the embedded script it belongs to. A case whose script does
// not exist fails, and so does a script without cases.
func TestScripts(t *testing.T) {
	scripts, cases := walkTree(t)
	vm := luavm.New(luavm.Options{})
	covered := map[string]bool{}
	for _, file := range cases {
		t.Run(file, func(t *testing.T) {
			name, script, err := scriptFor(file)
			if err != nil {
				t.Fatal(err)
			}
			covered[name] = true
			runCase(t, vm, file, script)
		})
	}
	for _, name := range scripts {
		if !covered[name] {
			t.Errorf("script %s has no testdata case", name)
		}
	}
}

// walkTree lists the .lua files and the testdata YAML files under the package directory.
func walkTree(t *testing.T) (scripts, cases []string) {
	t.Helper()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		p = filepath.ToSlash(p)
		switch {
		case strings.HasSuffix(p, ".lua"):
			scripts = append(scripts, p)
		case isCaseFile(p):
			cases = append(cases, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) == 0 || len(cases) == 0 {
		t.Fatalf("found %d scripts and %d cases", len(scripts), len(cases))
	}
	return scripts, cases
}

func isCaseFile(p string) bool {
	return (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) &&
		slices.Contains(strings.Split(path.Dir(p), "/"), "testdata")
}

// scriptFor maps a case file to its script through the package API: trafficrouting_ingress/testdata/<class>/
// belongs to Ingress(class), <group>/<Kind>/testdata/ to Custom(group, Kind). It returns the script's path.
func scriptFor(file string) (string, string, error) {
	parts := strings.Split(file, "/")
	if len(parts) >= 4 && parts[0] == "trafficrouting_ingress" && parts[1] == "testdata" {
		name := "trafficrouting_ingress/" + parts[2] + ".lua"
		script, ok := Ingress(parts[2])
		return name, script, lookupError(ok, file, name)
	}
	if len(parts) >= 4 && parts[2] == "testdata" {
		name := parts[0] + "/" + parts[1] + "/trafficRouting.lua"
		script, ok := Custom(parts[0], parts[1])
		return name, script, lookupError(ok, file, name)
	}
	return "", "", &caseError{file: file, msg: "is not in the testdata directory of a script"}
}

func lookupError(found bool, file, script string) error {
	if found {
		return nil
	}
	return &caseError{file: file, msg: "belongs to " + script + ", which is not an embedded script"}
}

type caseError struct{ file, msg string }

func (e *caseError) Error() string { return e.file + " " + e.msg }

func runCase(t *testing.T, vm *luavm.VM, file, script string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var c scriptCase
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		t.Fatalf("reading the case: %v", err)
	}
	if c.Input == nil || c.Expected == nil {
		t.Fatal("a case needs both input and expected")
	}
	var got any
	if err := vm.Eval(context.Background(), script, c.Input, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c.Expected, got); diff != "" {
		t.Errorf("returned value (-expected +got):\n%s", diff)
	}
}

func TestScriptLookup(t *testing.T) {
	nginx, ok := Ingress("nginx")
	if !ok || !strings.Contains(nginx, "nginx.ingress.kubernetes.io/") {
		t.Errorf("Ingress(nginx) = %t", ok)
	}
	if _, ok := Custom("networking.istio.io", "VirtualService"); !ok {
		t.Error("Custom(networking.istio.io, VirtualService) not found")
	}
	for _, class := range []string{"", "traefik", "../networking.istio.io/VirtualService/trafficRouting", "."} {
		if _, ok := Ingress(class); ok {
			t.Errorf("Ingress(%q) found a script", class)
		}
	}
	for _, gk := range [][2]string{{"networking.istio.io", "Gateway"}, {"", "VirtualService"},
		{"networking.istio.io/VirtualService", "."}, {"..", "trafficrouting_ingress"}} {
		if _, ok := Custom(gk[0], gk[1]); ok {
			t.Errorf("Custom(%q, %q) found a script", gk[0], gk[1])
		}
	}
}
