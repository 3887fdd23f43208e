package chart

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla-dev/flotilla/rollout/feature"
)

func TestLint(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"lint", "--strict", chartDir, "--namespace", c.rel.namespace}, c.rel.flags...)
			if _, err := runHelm(t, args...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRender(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := render(t, c.rel)
			checkInvariants(t, c, r)
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

// TestDefaultGolden pins the whole default rendering; -update rewrites it after an intended change.
func TestDefaultGolden(t *testing.T) {
	got := renderRaw(t, defaultRelease())
	path := filepath.Join("testdata", "default.golden.yaml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("default rendering differs from %s (-want +got; rerun with -update if intended):\n%s", path, diff)
	}
}

func TestRenderRejects(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"engineOnlyWithModules", []string{"--set", "engineOnly=true,modules={rollout}"}, "leave modules empty"},
		{"unknownModule", []string{"--set", "modules={nope}"}, `unknown module "nope"`},
		{"unknownGate", []string{"--set", "featureGates.Nope=true"}, `unknown feature gate "Nope"`},
		{"gateNotBool", []string{"--set", "featureGates.RolloutHistory=yes"}, "must be true or false"},
		{"unelectedReplicas", []string{"--set", "leaderElection.enabled=false"}, "needs replicas: 1"},
		{"oldKubernetes", []string{"--kube-version", "v1.29.9"}, "incompatible with Kubernetes v1.29.9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := runHelm(t, defaultRelease(c.flags...).templateArgs()...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("helm template %v: error %v, want one containing %q; output:\n%s", c.flags, err, c.want, out)
			}
		})
	}
}

// TestModulesMatchManager checks the chart's module names against the manager's module table: the chart
// accepts each, and names exactly those when it rejects an unknown one.
func TestModulesMatchManager(t *testing.T) {
	names := managerModules(t)
	for _, name := range names {
		render(t, defaultRelease("--set", "modules={"+name+"}"))
	}
	_, err := runHelm(t, defaultRelease("--set", "modules={nope}").templateArgs()...)
	slices.Sort(names)
	if want := "(known: " + strings.Join(names, ", ") + ")"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("unknown module error %v, want the manager's modules %s", err, want)
	}
}

// TestFeatureGatesMatchManager does the same for the manager's feature gates.
func TestFeatureGatesMatchManager(t *testing.T) {
	var names []string
	for name := range feature.Defaults {
		names = append(names, string(name))
		render(t, defaultRelease("--set", "featureGates."+string(name)+"=true"))
	}
	_, err := runHelm(t, defaultRelease("--set", "featureGates.Nope=true").templateArgs()...)
	slices.Sort(names)
	if want := "(known: " + strings.Join(names, ", ") + ")"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("unknown gate error %v, want the manager's gates %s", err, want)
	}
}

// managerModules reads the Name of every entry of the literal module table (var modules) in
// rollout/cmd/manager/main.go.
func managerModules(t *testing.T) []string {
	t.Helper()
	path := filepath.Join(repoRoot(t), "rollout", "cmd", "manager", "main.go")
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(file, func(n ast.Node) bool {
		if spec, ok := n.(*ast.ValueSpec); ok && len(spec.Names) == 1 && spec.Names[0].Name == "modules" {
			names = moduleNames(spec)
			return false
		}
		return true
	})
	if len(names) == 0 {
		t.Fatalf("no module table found in %s", path)
	}
	return names
}

// moduleNames collects the string values of Name fields under a declaration.
func moduleNames(spec *ast.ValueSpec) []string {
	var names []string
	ast.Inspect(spec, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		key, isIdent := kv.Key.(*ast.Ident)
		lit, isLit := kv.Value.(*ast.BasicLit)
		if isIdent && isLit && key.Name == "Name" && lit.Kind == token.STRING {
			if name, err := strconv.Unquote(lit.Value); err == nil {
				names = append(names, name)
			}
		}
		return true
	})
	return names
}
