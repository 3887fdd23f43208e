package admission

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	rolloutsv1alpha1 "github.com/flotilla-dev/flotilla/rollout/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Every Rollout that upstream's webhook accepts is accepted here, with the warnings the case names.
func TestUpstreamAcceptedRollouts(t *testing.T) {
	raw, err := os.ReadFile("testdata/upstream-accepts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := splitYAML(t, raw)
	if len(docs) < 10 {
		t.Fatalf("only %d cases in testdata/upstream-accepts.yaml", len(docs))
	}
	for _, doc := range docs {
		meta := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &meta.Object); err != nil {
			t.Fatal(err)
		}
		t.Run(meta.GetName(), func(t *testing.T) {
			errs, warnings := validateDocument(t, meta.GetAPIVersion(), doc)
			if len(errs) > 0 {
				t.Errorf("%s: rejected: %v", meta.GetAnnotations()["test.flotilla.dev/case"], errs)
			}
			want, _ := strconv.Atoi(meta.GetAnnotations()["test.flotilla.dev/warns"])
			if len(warnings) != want {
				t.Errorf("%d warnings, want %d: %q", len(warnings), want, warnings)
			}
		})
	}
}

func validateDocument(t *testing.T, apiVersion string, doc []byte) ([]string, []string) {
	t.Helper()
	if apiVersion == rolloutsv1alpha1.GroupVersion.String() {
		r := &rolloutsv1alpha1.Rollout{}
		if err := yaml.UnmarshalStrict(doc, r); err != nil {
			t.Fatal(err)
		}
		return errorStrings(ValidateV1alpha1Rollout(r, nil, DefaultOptions())), V1alpha1Warnings(r)
	}
	r := &rolloutsv1beta1.Rollout{}
	if err := yaml.UnmarshalStrict(doc, r); err != nil {
		t.Fatal(err)
	}
	return errorStrings(ValidateRollout(r, nil, DefaultOptions())), Warnings(r)
}

func splitYAML(t *testing.T, raw []byte) [][]byte {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if err != nil {
			return docs
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}
