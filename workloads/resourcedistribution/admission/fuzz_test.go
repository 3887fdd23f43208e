package admission

import (
	"encoding/json"
	"testing"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// FuzzValidate decodes arbitrary JSON as a new and a stored ResourceDistribution and validates them as on
// create and on update: nothing may panic, and an update that changes nothing adds no error to the create's.
func FuzzValidate(f *testing.F) {
	valid, err := json.Marshal(distribution(gameDemo))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(valid),
		`{"metadata":{"name":"A"},"spec":{"resource":{"apiVersion":"v1","kind":"Secret","metadata":{"name":""},"stringData":{"":""}},` +
			`"targets":{"includedNamespaces":{"list":[{"name":"x"},{}]},"excludedNamespaces":{"list":[{"name":"x"}]},` +
			`"namespaceLabelSelector":{"matchExpressions":[{"key":"","operator":"In"}]}}}}`,
		`{"spec":{"resource":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":""},"binaryData":{"k":null}}}}`,
	} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, oldDoc, newDoc string) {
		old, rd := &kruiseappsv1alpha1.ResourceDistribution{}, &kruiseappsv1alpha1.ResourceDistribution{}
		_ = json.Unmarshal([]byte(oldDoc), old)
		_ = json.Unmarshal([]byte(newDoc), rd)
		created := Validate(rd, nil)
		if same := Validate(rd, rd.DeepCopy()); len(same) > 0 {
			t.Fatalf("an update changing nothing refused: %v (create: %v)", same, created)
		}
		_ = Validate(rd, old)
	})
}
