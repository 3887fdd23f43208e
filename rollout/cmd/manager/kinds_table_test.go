package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kindRow is one row of the README's table of kinds: "| Kind | group | versions | in this installation |".
var kindRow = regexp.MustCompile("^\\| (\\w+) \\| ([a-z.]+) \\| ([a-z0-9, ()]+) \\| (reconciled \\(`(\\w+)` module[^)]*\\)|API only.*) \\|$")

// readmeRow is what a row of the table says of a kind.
type readmeRow struct{ versions, module string }

// The README's table of kinds says of each kind the chart installs which versions the CRD serves (and stores)
// and what the module table does: reconciled by the module whose Reconciles name it, or API only.
func TestREADMEKindsTable(t *testing.T) {
	rows := readmeKinds(t)
	for _, crd := range chartCRDs(t) {
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		got, ok := rows[gk]
		if !ok {
			t.Errorf("the README's table of kinds lacks %s", gk)
			continue
		}
		if want := reconciledBy(gk); got.module != want {
			t.Errorf("%s: the README says %q, the module table %q", gk, got.module, want)
		}
		if want := servedVersions(crd); got.versions != want {
			t.Errorf("%s: the README says versions %q, the CRD serves %q", gk, got.versions, want)
		}
		delete(rows, gk)
	}
	for gk := range rows {
		t.Errorf("the README lists %s, which the chart does not install", gk)
	}
}

// servedVersions is the README's spelling of the versions a CRD serves: "v1alpha1 (stored), v1beta1".
func servedVersions(crd *apiextensionsv1.CustomResourceDefinition) string {
	var names []string
	for _, v := range crd.Spec.Versions {
		if v.Served && v.Storage {
			names = append(names, v.Name+" (stored)")
		} else if v.Served {
			names = append(names, v.Name)
		}
	}
	return strings.Join(names, ", ")
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

func readmeKinds(t *testing.T) map[schema.GroupKind]readmeRow {
	t.Helper()
	raw, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[schema.GroupKind]readmeRow{}
	for _, line := range strings.Split(string(raw), "\n") {
		if m := kindRow.FindStringSubmatch(line); m != nil {
			rows[schema.GroupKind{Group: m[2], Kind: m[1]}] = readmeRow{versions: m[3], module: m[5]}
		}
	}
	if len(rows) == 0 {
		t.Fatal("no table of kinds in the README")
	}
	return rows
}
