package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
)

const seedDir = "../testdata/seed"

func TestParseSeed(t *testing.T) {
	data := []byte("# seed line 12\n# expect-rejected: spec.x\n# why: because\napiVersion: v1\nkind: K\nmetadata:\n  name: demo\nspec:\n  x: 1\n")
	s, err := ParseSeed("001-k-n.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if s.Line != 12 || s.ExpectRejected != "spec.x" || s.Fragment != "" || s.Object().GetName() != "demo" {
		t.Errorf("ParseSeed() = %+v", s)
	}
}

func TestParseSeedErrors(t *testing.T) {
	tests := map[string]string{
		"no header":         "apiVersion: v1\nkind: K\nmetadata:\n  name: demo\n",
		"no name":           "# seed line 1\napiVersion: v1\nkind: K\n",
		"two objects":       "# seed line 1\napiVersion: v1\nkind: K\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: K\nmetadata:\n  name: b\n",
		"duplicate key":     "# seed line 1\n# fragment: f\napiVersion: v1\nkind: K\nspec: 1\nspec: 2\n",
		"rejected fragment": "# seed line 1\n# fragment: f\n# expect-rejected: x\napiVersion: v1\nkind: K\n",
		"bad line":          "# seed line x\napiVersion: v1\nkind: K\nmetadata:\n  name: demo\n",
		"only comments":     "# seed line 1\n# fragment: f\n",
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseSeed("f.yaml", []byte(data)); err == nil {
				t.Error("ParseSeed() succeeded, want an error")
			}
		})
	}
}

func TestForApplyDropsServerFields(t *testing.T) {
	s, err := ParseSeed("f.yaml", []byte("# seed line 1\napiVersion: v1\nkind: K\nmetadata:\n  name: demo\n  uid: u\n  resourceVersion: \"7\"\n  labels: {a: b}\nspec:\n  list:\n  - {keep: 1, gone: null}\n  policy:\n    type:\nstatus:\n  x: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := ForApply(s.Object())
	if got.GetUID() != "" || got.GetResourceVersion() != "" || got.Object["status"] != nil || got.GetLabels()["a"] != "b" {
		t.Errorf("ForApply() = %v", got.Object)
	}
	wantSpec := map[string]any{"list": []any{map[string]any{"keep": int64(1)}}, "policy": map[string]any{}}
	if !reflect.DeepEqual(got.Object["spec"], wantSpec) {
		t.Errorf("ForApply() spec = %v, want %v", got.Object["spec"], wantSpec)
	}
	if s.Object().GetUID() != "u" {
		t.Error("ForApply() changed its input")
	}
}

var seedName = regexp.MustCompile(`^(\d{3})-([a-z]+)-([a-z0-9-]+)\.yaml$`)

// TestSeedFiles checks the collected examples: numbered in document order,
// named after their kind and object, and parseable.
func TestSeedFiles(t *testing.T) {
	seeds, err := LoadSeeds(seedDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(seeds) == 0 {
		t.Fatal("no seed files")
	}
	lastLine := 0
	for i, s := range seeds {
		if err := checkSeedName(s, i+1); err != nil {
			t.Error(err)
		}
		if s.Line <= lastLine {
			t.Errorf("%s: seed line %d is not after %d", s.File, s.Line, lastLine)
		}
		lastLine = s.Line
	}
}

func checkSeedName(s Seed, n int) error {
	m := seedName.FindStringSubmatch(s.File)
	if m == nil {
		return fmt.Errorf("%s: name is not NNN-<kind>-<name>.yaml", s.File)
	}
	if want := fmt.Sprintf("%03d", n); m[1] != want {
		return fmt.Errorf("%s: number %s, want %s", s.File, m[1], want)
	}
	if kind := strings.ToLower(s.Objects[0].GetKind()); m[2] != kind {
		return fmt.Errorf("%s: kind in name %q, object is %q", s.File, m[2], kind)
	}
	if s.Fragment == "" && m[3] != s.Object().GetName() {
		return fmt.Errorf("%s: name in file %q, object is %q", s.File, m[3], s.Object().GetName())
	}
	return nil
}

// TestSeedDeps decodes the native objects strictly, so a misplaced field in
// the re-indented YAML fails here rather than being dropped by a server.
func TestSeedDeps(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(seedDir, "deps", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no deps files (%v)", err)
	}
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), "# seed line ") {
			t.Errorf("%s: missing seed line header", p)
		}
		if _, _, err := decoder.Decode(data, nil, nil); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
