package bench

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const benchOutput = `goos: linux
goarch: amd64
pkg: github.com/flotilla-dev/flotilla/rollout
cpu: Some CPU
BenchmarkRolloutConversion/v1alpha1-to-v1beta1-2         	  525812	      2260 ns/op	     960 B/op	      17 allocs/op
BenchmarkConversionWebhook/v1beta1-to-v1alpha1-2         	   18766	     55469 ns/op	   13309 B/op	     108 allocs/op
PASS
ok  	github.com/flotilla-dev/flotilla/rollout	5.037s
pkg: github.com/flotilla-dev/flotilla/trafficrouting/luavm
BenchmarkEval-2   	 1000	 1234.5 ns/op
BenchmarkBroken-2 	 notanumber	 1 ns/op
PASS
`

func TestParseBenchOutput(t *testing.T) {
	got, err := ParseBenchOutput(strings.NewReader(benchOutput))
	if err != nil {
		t.Fatal(err)
	}
	want := []Benchmark{
		{Package: "github.com/flotilla-dev/flotilla/rollout", Name: "BenchmarkRolloutConversion/v1alpha1-to-v1beta1",
			Iterations: 525812, NsPerOp: 2260, BytesPerOp: 960, AllocsPerOp: 17, Runs: 1},
		{Package: "github.com/flotilla-dev/flotilla/rollout", Name: "BenchmarkConversionWebhook/v1beta1-to-v1alpha1",
			Iterations: 18766, NsPerOp: 55469, BytesPerOp: 13309, AllocsPerOp: 108, Runs: 1},
		{Package: "github.com/flotilla-dev/flotilla/trafficrouting/luavm", Name: "BenchmarkEval", Iterations: 1000, NsPerOp: 1234.5, Runs: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseBenchOutput =\n%+v\nwant\n%+v", got, want)
	}
	m := got[0].metric()
	if m.Unit != UnitNsPerOp || m.Value != 2260 || m.Note != "960 B/op, 17 allocs/op (rollout)" {
		t.Fatalf("metric = %+v", m)
	}
}

func TestMedianBenchmarks(t *testing.T) {
	runs := []Benchmark{
		{Package: "p", Name: "BenchmarkA", Iterations: 10, NsPerOp: 300, BytesPerOp: 8, AllocsPerOp: 1, Runs: 1},
		{Package: "p", Name: "BenchmarkB", Iterations: 5, NsPerOp: 9, Runs: 1},
		{Package: "p", Name: "BenchmarkA", Iterations: 30, NsPerOp: 100, BytesPerOp: 8, AllocsPerOp: 1, Runs: 1},
		{Package: "q", Name: "BenchmarkA", Iterations: 1, NsPerOp: 1, Runs: 1},
		{Package: "p", Name: "BenchmarkA", Iterations: 20, NsPerOp: 900, BytesPerOp: 16, AllocsPerOp: 2, Runs: 1},
		{Package: "p", Name: "BenchmarkB", Iterations: 7, NsPerOp: 11, Runs: 1},
	}
	got := MedianBenchmarks(runs)
	want := []Benchmark{
		{Package: "p", Name: "BenchmarkA", Iterations: 20, NsPerOp: 300, BytesPerOp: 8, AllocsPerOp: 1, Runs: 3},
		{Package: "p", Name: "BenchmarkB", Iterations: 5, NsPerOp: 9, Runs: 2},
		{Package: "q", Name: "BenchmarkA", Iterations: 1, NsPerOp: 1, Runs: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MedianBenchmarks =\n%+v\nwant\n%+v", got, want)
	}
}

func TestBenchmarkPackages(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                      "module example\n",
		"a/a_test.go":                 "package a\n\nfunc BenchmarkA(b *testing.B) {}\n",
		"a/b/b_test.go":               "package b\n\nfunc TestB(t *testing.T) {}\n",
		"c/c_test.go":                 "package c\n// func BenchmarkInComment(b *testing.B)\nfunc BenchmarkC(b *testing.B) {}\n",
		"c/c.go":                      "package c\n\nfunc BenchmarkNotATest() {}\n",
		"d/d.go":                      "package d\n",
		"tools/go.mod":                "module tools\n",
		"tools/t_test.go":             "package tools\n\nfunc BenchmarkT(b *testing.B) {}\n",
		"e/testdata/x_test.go":        "package x\n\nfunc BenchmarkX(b *testing.B) {}\n",
		".hidden/h_test.go":           "package h\n\nfunc BenchmarkH(b *testing.B) {}\n",
		"f/comment_only_test.go":      "package f\n// func BenchmarkF(b *testing.B) {}\n",
		"g/nested/deep/deep_test.go":  "package deep\n\nfunc BenchmarkDeep(b *testing.B) {}\n",
		"g/nested/deep/other_test.go": "package deep\n\nfunc BenchmarkOther(b *testing.B) {}\n",
	}
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := BenchmarkPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"./a", "./c", "./g/nested/deep"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("BenchmarkPackages = %v, want %v", got, want)
	}
}

func TestSelect(t *testing.T) {
	all := []Scenario{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	all[1].Scale = true
	got, err := Select(all, []string{"c", "b"}, SetDefault)
	if err != nil || len(got) != 2 || got[0].Name != "b" || got[1].Name != "c" {
		t.Fatalf("Select = %+v, %v: a named scale scenario runs whatever the set", got, err)
	}
	for set, want := range map[string][]string{SetDefault: {"a", "c"}, SetScale: {"b"}, SetAll: {"a", "b", "c"}} {
		got, err := Select(all, nil, set)
		var names []string
		for _, s := range got {
			names = append(names, s.Name)
		}
		if err != nil || strings.Join(names, ",") != strings.Join(want, ",") {
			t.Errorf("set %s selects %v (%v), want %v", set, names, err, want)
		}
	}
	if _, err := Select(all, nil, "most"); err == nil {
		t.Error("an unknown set must be refused")
	}
	if _, err := Select(all, []string{"nope"}, SetDefault); err == nil || !strings.Contains(err.Error(), "a, b, c") {
		t.Fatalf("unknown name: %v", err)
	}
}

func TestScenariosAreNamedOnceAndBounded(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Scenarios() {
		if s.Name == "" || seen[s.Name] || s.Run == nil || s.Timeout <= 0 || s.Description == "" {
			t.Errorf("scenario %+v", s.Name)
		}
		seen[s.Name] = true
	}
	for _, name := range []string{"apiserver-floor", "manager-idle", "micro-benchmarks"} {
		if !seen[name] {
			t.Errorf("scenario %s missing", name)
		}
	}
}

func TestClusterSize(t *testing.T) {
	for _, s := range Scenarios() {
		size := clusterSize(s)
		if s.Name == "manager-idle" && (size.Nodes*size.PodsPerNode < idleDeployments*idleReplicas || !size.ControllerManager || !size.Scheduler) {
			t.Errorf("manager-idle cluster %+v cannot hold %d pods", size, idleDeployments*idleReplicas)
		}
		if s.NoCluster && (size.Nodes != 0 || size.ControllerManager || size.Scheduler) {
			t.Errorf("%s has no cluster but reports %+v", s.Name, size)
		}
	}
}
