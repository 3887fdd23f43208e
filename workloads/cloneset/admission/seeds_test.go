package admission

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// seedDir holds the seed document's examples, one per file, shared with the e2e suite.
const seedDir = "../../../test/e2e/testdata/seed"

// The seed's complete CloneSets (its fragments aside) are accepted once defaulted; the one naming a pod to
// delete needs that pod to exist and belong to it.
func TestSeedCloneSetsAreAccepted(t *testing.T) {
	for _, file := range []string{
		"001-cloneset-nginx.yaml", "002-cloneset-nginx.yaml", "003-cloneset-nginx.yaml", "004-cloneset-nginx.yaml",
		"005-cloneset-nginx.yaml", "007-cloneset-nginx.yaml", "010-cloneset-nginx.yaml", "034-cloneset-busybox.yaml",
	} {
		t.Run(file, func(t *testing.T) {
			cs := seedCloneSet(t, file)
			Default(cs)
			pods := podMap(pod("nginx-7pftf"))
			if errs := Validate(cs, nil, pods); len(errs) > 0 {
				t.Fatalf("rejected: %v", errs)
			}
			if errs := Validate(cs, cs.DeepCopy(), nil); len(errs) > 0 {
				t.Fatalf("update without changes rejected: %v", errs)
			}
		})
	}
}

// The e2e suite expects this seed refused for its podsToDelete entry when no such pod exists.
func TestSeedPodsToDeleteOfAMissingPod(t *testing.T) {
	cs := seedCloneSet(t, "003-cloneset-nginx.yaml")
	Default(cs)
	expectOneError(t, Validate(cs, nil, map[string]*corev1.Pod{}), field.ErrorTypeInvalid, "spec.scaleStrategy.podsToDelete[0]")
}

func seedCloneSet(t *testing.T, file string) *kruiseappsv1alpha1.CloneSet {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(seedDir, file))
	if err != nil {
		t.Fatal(err)
	}
	cs := &kruiseappsv1alpha1.CloneSet{}
	if err := yaml.UnmarshalStrict(raw, cs); err != nil {
		t.Fatalf("decoding %s: %v", file, err)
	}
	cs.UID = csUID
	return cs
}
