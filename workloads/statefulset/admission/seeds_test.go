package admission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/revision"
)

// seedDir holds the seed document's examples, one per file, shared with the e2e suite.
const seedDir = "../../../test/e2e/testdata/seed"

var allGates = Options{AutoDeletePVC: true, AutoResizePVC: true}

func seedSet(t *testing.T, file string) *kruiseappsv1beta1.StatefulSet {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(seedDir, file))
	if err != nil {
		t.Fatal(err)
	}
	set := &kruiseappsv1beta1.StatefulSet{}
	if err := yaml.UnmarshalStrict(raw, set); err != nil {
		t.Fatalf("decoding %s: %v", file, err)
	}
	return set
}

// The seed's complete Advanced StatefulSets are accepted once defaulted, but the one the seed says the
// webhook blocks: in-place updates without the InPlaceUpdateReady readiness gate.
func TestSeedStatefulSets(t *testing.T) {
	for file, rejected := range map[string]string{
		"012-statefulset-nginx.yaml": "", "013-statefulset-nginx-a.yaml": "", "015-statefulset-nginx-a.yaml": "",
		"016-statefulset-nginx-a.yaml": "", "014-statefulset-nginx-a.yaml": "spec.template.spec.readinessGates",
	} {
		t.Run(file, func(t *testing.T) {
			set := seedSet(t, file)
			Default(set, allGates)
			errs := Validate(set, nil)
			if rejected == "" && len(errs) > 0 {
				t.Fatalf("rejected: %v", errs)
			}
			if rejected != "" && (len(errs) != 1 || errs[0].Field != rejected) {
				t.Fatalf("errors %v, want one at %s", errs, rejected)
			}
		})
	}
}

// The seed's `kubectl describe asts nginx-a` names the revision upstream gave the in-place example's
// template: Flotilla's defaults and revision data must hash to the same name, or every pod upstream created
// would look outdated after a switch.
func TestSeedRevisionHash(t *testing.T) {
	set := seedSet(t, "015-statefulset-nginx-a.yaml")
	Default(set, allGates)
	data, err := revision.TemplatePatch(&set.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	if got := revision.Name(set.Name, revision.Hash(data, ptr.To[int32](0))); got != "nginx-a-79b799b689" {
		t.Errorf("revision %s, want nginx-a-79b799b689 (data %s)", got, strings.TrimSpace(string(data)))
	}
}
