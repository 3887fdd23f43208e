package admission

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// FuzzValidate decodes arbitrary JSON as a new and a stored BroadcastJob, defaults and validates them as on
// create and on update: nothing may panic, and defaulting twice changes nothing.
func FuzzValidate(f *testing.F) {
	valid, err := json.Marshal(broadcastJob())
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(valid),
		`{"metadata":{"name":"a.b"},"spec":{"parallelism":"x%","completionPolicy":{"type":"Never","ttlSecondsAfterFinished":-1},` +
			`"template":{"metadata":{"labels":{"broadcastjob-name":""}},"spec":{"containers":[{},{"volumeMounts":[{}]}]}}}}`,
	} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, oldDoc, newDoc string) {
		old, j := &kruiseappsv1alpha1.BroadcastJob{}, &kruiseappsv1alpha1.BroadcastJob{}
		_ = json.Unmarshal([]byte(oldDoc), old)
		_ = json.Unmarshal([]byte(newDoc), j)
		Default(old, nil)
		Default(j, old)
		again := j.DeepCopy()
		Default(again, nil)
		if !equality.Semantic.DeepEqual(j, again) {
			t.Fatal("a second Default changed the BroadcastJob")
		}
		_ = Validate(j, nil)
		_ = Validate(j, old)
	})
}
