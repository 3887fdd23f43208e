package admission

import (
	"encoding/json"
	"testing"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

// FuzzValidate decodes arbitrary JSON as a new and a stored PodUnavailableBudget and validates them as on
// create, on update and against each other: nothing may panic, and an update that changes nothing adds no
// error to the create's.
func FuzzValidate(f *testing.F) {
	for _, p := range []*pub{selecting(), targeting()} {
		raw, err := json.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(raw), string(raw))
	}
	f.Add(`{"metadata":{"annotations":{"kruise.io/pub-protect-operations":",,"}},"spec":{"selector":{"matchExpressions":[{"key":"","operator":"In"}]},"maxUnavailable":"%"}}`,
		`{"spec":{"targetRef":{"apiVersion":"///"},"minAvailable":-3}}`)
	f.Fuzz(func(t *testing.T, oldDoc, newDoc string) {
		old, p := &kruisepolicyv1alpha1.PodUnavailableBudget{}, &kruisepolicyv1alpha1.PodUnavailableBudget{}
		_ = json.Unmarshal([]byte(oldDoc), old)
		_ = json.Unmarshal([]byte(newDoc), p)
		created := Validate(p, nil)
		if same := Validate(p, p.DeepCopy()); len(same) > 0 {
			t.Fatalf("an update changing nothing refused: %v (create: %v)", same, created)
		}
		_ = Validate(p, old)
		_ = Conflicts(p, []kruisepolicyv1alpha1.PodUnavailableBudget{*old})
	})
}
