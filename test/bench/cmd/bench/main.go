// Command bench runs Flotilla's benchmark scenarios (`make bench`): each on
// its own local control plane, results to a JSON file and a table on
// stdout. Progress goes to stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/flotilla-dev/flotilla/test/bench"
	"github.com/flotilla-dev/flotilla/test/cluster"
)

func main() {
	code, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	os.Exit(code)
}

// run returns 1 when a scenario failed; a missed target is a finding shown
// in the table, not a failure.
func run() (int, error) {
	scenario := flag.String("scenario", "", "comma-separated scenarios to run (default: all)")
	out := flag.String("out", "", "results file (default: <module>/test/bench/results/bench-results.json)")
	manager := flag.String("manager", "", "prebuilt flotilla-manager binary (default: build it)")
	list := flag.Bool("list", false, "list the scenarios and exit")
	set := flag.String("set", bench.SetDefault, "without --scenario, which scenarios run: default (all but the fleet- and 10k-sized ones), scale (those), or all")
	markdown := flag.String("markdown", "", "print a results file as the Markdown table of docs/performance.md and exit")
	flag.Parse()
	if *markdown != "" {
		return printMarkdown(*markdown)
	}

	all := bench.Scenarios()
	if *list {
		for _, s := range all {
			fmt.Printf("%-24s %s%s\n", s.Name, s.Description, map[bool]string{true: " [scale]"}[s.Scale])
		}
		return 0, nil
	}
	scenarios, err := bench.Select(all, splitNames(*scenario), *set)
	if err != nil {
		return 2, err
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		return 2, err
	}
	return runScenarios(root, scenarios, resultsPath(root, *out), absOrEmpty(*manager))
}

func runScenarios(root string, scenarios []bench.Scenario, out, manager string) (int, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	runner := &bench.Runner{Root: root, ManagerBinary: manager, Log: os.Stderr, Meta: bench.CollectMeta(ctx, root)}
	results := runner.Run(ctx, scenarios)
	if err := bench.WriteJSON(out, results); err != nil {
		return 1, err
	}
	fmt.Println()
	if err := bench.RenderTable(os.Stdout, results); err != nil {
		return 1, err
	}
	fmt.Printf("\nresults: %s\n", out)
	return exitCode(ctx, results), nil
}

func printMarkdown(path string) (int, error) {
	results, err := bench.ReadJSON(path)
	if err != nil {
		return 2, err
	}
	if err := bench.RenderMarkdown(os.Stdout, results); err != nil {
		return 1, err
	}
	return 0, nil
}

func exitCode(ctx context.Context, results []bench.Result) int {
	if ctx.Err() != nil {
		return 130
	}
	for _, r := range results {
		if r.Error != "" {
			return 1
		}
	}
	return 0
}

func splitNames(s string) []string {
	var names []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

func resultsPath(root, flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return filepath.Join(root, "test", "bench", "results", "bench-results.json")
}

// absOrEmpty makes a relative binary path absolute: the manager starts in
// another working directory.
func absOrEmpty(path string) string {
	if path == "" {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
