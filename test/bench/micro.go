package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// microRuns is how many times each benchmark runs; the median is kept, so
// one run disturbed by a neighbour on the shared machine does not count.
const microRuns = 3

// microBenchmarks runs every `go test -bench` benchmark of the module and
// records its time, memory and allocations per operation.
func microBenchmarks() Scenario {
	return Scenario{
		Name:        "micro-benchmarks",
		Description: "go test -bench over every package of the module that has benchmarks (planners, Lua, webhook handlers, conversion)",
		NoCluster:   true,
		Timeout:     10 * time.Minute,
		Run:         runMicro,
	}
}

func runMicro(ctx context.Context, env *Env, res *Result) error {
	pkgs, err := BenchmarkPackages(env.Root)
	if err != nil {
		return err
	}
	if len(pkgs) == 0 {
		env.Logf("no package has benchmarks")
		return nil
	}
	env.Logf("go test -bench in %s", strings.Join(pkgs, " "))
	var out bytes.Buffer
	cmd := commandIn(ctx, env.Root, "go", append([]string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-count", strconv.Itoa(microRuns)}, pkgs...)...)
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, env.log), env.log
	begin := time.Now()
	runErr := cmd.Run()
	res.WallSeconds = time.Since(begin).Seconds()
	benchmarks, err := ParseBenchOutput(&out)
	if err != nil {
		return err
	}
	res.Benchmarks = MedianBenchmarks(benchmarks)
	for _, b := range res.Benchmarks {
		res.Add(b.metric())
	}
	if runErr != nil {
		return fmt.Errorf("go test -bench: %w", runErr)
	}
	return nil
}

// Benchmark is one line of `go test -bench -benchmem` output.
type Benchmark struct {
	Package     string  `json:"package"`
	Name        string  `json:"name"`
	Iterations  int64   `json:"iterations"`
	NsPerOp     float64 `json:"nsPerOp"`
	BytesPerOp  float64 `json:"bytesPerOp"`
	AllocsPerOp float64 `json:"allocsPerOp"`
	// Runs is how many runs the figures are the median of.
	Runs int `json:"runs"`
}

func (b Benchmark) metric() Metric {
	return Metric{
		Name: b.Name, Unit: UnitNsPerOp, Value: b.NsPerOp,
		Note: fmt.Sprintf("%s/op, %.0f allocs/op (%s)", formatBytes(b.BytesPerOp), b.AllocsPerOp, shortPackage(b.Package)),
	}
}

func shortPackage(pkg string) string {
	return strings.TrimPrefix(pkg, "github.com/flotilla-dev/flotilla/")
}

// gomaxprocsSuffix is the "-N" go test appends to a benchmark's name.
var gomaxprocsSuffix = regexp.MustCompile(`-\d+$`)

// ParseBenchOutput reads benchmark lines, attributing each to the package
// of the "pkg:" line before it.
func ParseBenchOutput(r io.Reader) ([]Benchmark, error) {
	var out []Benchmark
	pkg := ""
	scanner := bufio.NewScanner(r)
	for scanner.Scan() {
		line := scanner.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if b, ok := parseBenchLine(line); ok {
			b.Package = pkg
			out = append(out, b)
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("reading benchmark output: %w", err)
	}
	return out, nil
}

// parseBenchLine reads `BenchmarkX-2  1000  1234 ns/op  56 B/op  7 allocs/op`.
func parseBenchLine(line string) (Benchmark, bool) {
	fields := strings.Fields(line)
	if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
		return Benchmark{}, false
	}
	iterations, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return Benchmark{}, false
	}
	b := Benchmark{Name: gomaxprocsSuffix.ReplaceAllString(fields[0], ""), Iterations: iterations, Runs: 1}
	for i := 2; i+1 < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return Benchmark{}, false
		}
		b.set(fields[i+1], v)
	}
	return b, true
}

func (b *Benchmark) set(unit string, v float64) {
	switch unit {
	case "ns/op":
		b.NsPerOp = v
	case "B/op":
		b.BytesPerOp = v
	case "allocs/op":
		b.AllocsPerOp = v
	}
}

// MedianBenchmarks merges the runs of each benchmark (same package and
// name) into one, in first-seen order, with the median of each figure.
func MedianBenchmarks(runs []Benchmark) []Benchmark {
	type key struct{ pkg, name string }
	groups := map[key][]Benchmark{}
	var order []key
	for _, b := range runs {
		k := key{b.Package, b.Name}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], b)
	}
	out := make([]Benchmark, 0, len(order))
	for _, k := range order {
		out = append(out, medianOf(groups[k]))
	}
	return out
}

func medianOf(runs []Benchmark) Benchmark {
	b := runs[0]
	b.Runs = len(runs)
	b.Iterations = int64(median(runs, func(r Benchmark) float64 { return float64(r.Iterations) }))
	b.NsPerOp = median(runs, func(r Benchmark) float64 { return r.NsPerOp })
	b.BytesPerOp = median(runs, func(r Benchmark) float64 { return r.BytesPerOp })
	b.AllocsPerOp = median(runs, func(r Benchmark) float64 { return r.AllocsPerOp })
	return b
}

// median of an even count is the lower middle value: a figure that was
// measured, not an average of two.
func median(runs []Benchmark, field func(Benchmark) float64) float64 {
	values := make([]float64, len(runs))
	for i, r := range runs {
		values[i] = field(r)
	}
	slices.Sort(values)
	return values[(len(values)-1)/2]
}

// benchmarkFunc finds a benchmark declaration in a test file.
var benchmarkFunc = regexp.MustCompile(`(?m)^func Benchmark\w*\(`)

// BenchmarkPackages lists the module's packages ("./dir") that declare a
// benchmark, skipping nested modules, testdata and hidden directories.
func BenchmarkPackages(root string) ([]string, error) {
	set := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return skipDir(root, path, d.Name())
		}
		if strings.HasSuffix(path, "_test.go") && declaresBenchmark(path) {
			set[filepath.Dir(path)] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("finding benchmarks: %w", err)
	}
	var pkgs []string
	for dir := range set {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return nil, fmt.Errorf("finding benchmarks: %w", err)
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(rel))
	}
	slices.Sort(pkgs)
	return pkgs, nil
}

func skipDir(root, path, name string) error {
	if path == root {
		return nil
	}
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "bin" {
		return filepath.SkipDir
	}
	if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
		return filepath.SkipDir // another module
	}
	return nil
}

func declaresBenchmark(path string) bool {
	data, err := os.ReadFile(path)
	return err == nil && benchmarkFunc.Match(data)
}
