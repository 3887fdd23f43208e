package main

import (
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// The lazy logger writes what the logger under it writes, caller included, for any mix of names, values,
// levels and call depths.
func TestLazyLoggerWritesTheSameLines(t *testing.T) {
	var direct, lazy []string
	opts := funcr.Options{LogCaller: funcr.All, Verbosity: 1}
	base := func(into *[]string) logr.Logger {
		return funcr.New(func(prefix, args string) { *into = append(*into, prefix+" "+args) }, opts)
	}
	logBoth := func(f func(l logr.Logger)) {
		f(base(&direct))
		f(lazyLogger(base(&lazy)))
	}
	logBoth(func(l logr.Logger) {
		r := l.WithName("controller").WithValues("controller", "rollout").WithName("reconcile").
			WithValues("namespace", "ns", "name", "web")
		r.Info("first line", "step", 1)
		r.Info("second line from the same logger")
		r.V(1).Info("at level 1")
		r.V(2).Info("at level 2: not written")
		r.Error(errors.New("boom"), "failed", "retry", true)
		l.WithValues("only", "values").Info("no name")
		helper(l.WithName("helper"))
	})
	if len(direct) != 6 {
		t.Fatalf("the direct logger wrote %d lines, want 6: %q", len(direct), direct)
	}
	for i := range direct {
		if i >= len(lazy) || lazy[i] != direct[i] {
			t.Errorf("line %d: lazy %q, want %q", i, at(lazy, i), direct[i])
		}
	}
	if len(lazy) != len(direct) {
		t.Errorf("the lazy logger wrote %d lines, want %d", len(lazy), len(direct))
	}
}

func helper(l logr.Logger) {
	l.WithCallDepth(1).Info("attributed to the helper's caller")
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "<none>"
}
