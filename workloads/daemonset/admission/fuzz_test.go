package admission

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// FuzzValidate decodes arbitrary JSON as a new and a stored DaemonSet, defaults and validates them as on
// create and on update: nothing may panic, and defaulting twice changes nothing.
func FuzzValidate(f *testing.F) {
	valid, err := json.Marshal(daemonSet())
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(valid),
		`{"spec":{"selector":{"matchExpressions":[{"key":"","operator":"In"}]},"updateStrategy":{"type":"RollingUpdate",` +
			`"rollingUpdate":{"rollingUpdateType":"Surging","maxUnavailable":"-0%","maxSurge":"99999999999999999999%","partition":"%"}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{},{"name":"a","volumeMounts":[{}]}],"volumes":[{"gcePersistentDisk":{}}]}},` +
			`"updateStrategy":{"rollingUpdate":{"rollingUpdateType":"InPlaceIfPossible","maxSurge":"x"}},"lifecycle":{"inPlaceUpdate":{}}}}`,
	} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, oldDoc, newDoc string) {
		old, ds := &kruiseappsv1alpha1.DaemonSet{}, &kruiseappsv1alpha1.DaemonSet{}
		_ = json.Unmarshal([]byte(oldDoc), old)
		_ = json.Unmarshal([]byte(newDoc), ds)
		Default(old)
		Default(ds)
		again := ds.DeepCopy()
		Default(again)
		if !equality.Semantic.DeepEqual(ds, again) {
			t.Fatal("a second Default changed the DaemonSet")
		}
		_ = Validate(ds, nil)
		_ = Validate(ds, old)
	})
}
