package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// kindRow is one row of the README's table of kinds: "| Kind | group | in this installation |".
var kindRow = regexp.MustCompile("^\\| (\\w+) \\| ([a-z.]+) \\| (reconciled \\(`(\\w+)` module[^)]*\\)|API only.*) \\|$")

// The README's table of kinds says of each kind the chart installs what the module table does: reconciled by
// the module whose Reconciles name it, or API only.
func TestREADMEKindsTable(t *testing.T) {
	rows := readmeKinds(t)
	chart := chartKinds(t)
	for _, gk := range chart {
		got, ok := rows[gk]
		if !ok {
			t.Errorf("the README's table of kinds lacks %s", gk)
			continue
		}
		if want := reconciledBy(gk); got != want {
			t.Errorf("%s: the README says %q, the module table %q", gk, got, want)
		}
		delete(rows, gk)
	}
	for gk := range rows {
		t.Errorf("the README lists %s, which the chart does not install", gk)
	}
}

// reconciledBy is the module that reconciles gk, or "" for API only.
func reconciledBy(gk schema.GroupKind) string {
	for _, m := range modules {
		if slices.Contains(m.Reconciles, gk) {
			return m.Name
		}
	}
	return ""
}

func readmeKinds(t *testing.T) map[schema.GroupKind]string {
	t.Helper()
	raw, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[schema.GroupKind]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if m := kindRow.FindStringSubmatch(line); m != nil {
			rows[schema.GroupKind{Group: m[2], Kind: m[1]}] = m[4]
		}
	}
	if len(rows) == 0 {
		t.Fatal("no table of kinds in the README")
	}
	return rows
}

func chartKinds(t *testing.T) []schema.GroupKind {
	t.Helper()
	files, err := filepath.Glob("../../../charts/flotilla/crds/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("chart CRDs: %v", err)
	}
	var out []schema.GroupKind
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			t.Fatal(fmt.Errorf("%s: %w", f, err))
		}
		out = append(out, schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind})
	}
	return out
}
