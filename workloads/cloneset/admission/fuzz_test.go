package admission

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func fuzzSeeds(t interface{ Fatal(...any) }) []string {
	b, err := json.Marshal(cloneSet())
	if err != nil {
		t.Fatal(err)
	}
	return []string{
		string(b),
		`{"metadata":{"uid":"cs-uid"},"spec":{"replicas":-1,"selector":{"matchExpressions":[{"key":"","operator":"In"}]},` +
			`"updateStrategy":{"type":"InPlaceOnly","partition":"%","maxUnavailable":"-0%","maxSurge":"9999999999%",` +
			`"priorityStrategy":{"weightPriority":[{"weight":101}],"orderPriority":[{}]},"scatterStrategy":[{},{}]},` +
			`"scaleStrategy":{"podsToDelete":["p","p",""],"maxUnavailable":"x"},"progressDeadlineSeconds":0}}`,
		`{"spec":{"template":{"spec":{"containers":[{},{"name":"a","volumeMounts":[{}]}],"initContainers":[{"name":"a"}],` +
			`"volumes":[{},{}],"ephemeralContainers":[{}]}},"volumeClaimTemplates":[{"spec":{"resources":{"requests":{"storage":"1e-9"}}}},{}]}}`,
		`{"spec":{"template":{"metadata":{"labels":null}},"updateStrategy":{"partition":2.5}}}`,
	}
}

// FuzzValidate decodes arbitrary JSON as a new and a stored CloneSet, defaults and validates them as on
// create and on update: nothing may panic, and defaulting twice changes nothing.
func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, oldDoc, newDoc string) {
		old, cs := &kruiseappsv1alpha1.CloneSet{}, &kruiseappsv1alpha1.CloneSet{}
		_ = json.Unmarshal([]byte(oldDoc), old)
		_ = json.Unmarshal([]byte(newDoc), cs)
		pods := podMap(pod("p"), terminating(pod("q")))
		Default(old)
		created := cs.DeepCopy()
		Default(created)
		again := created.DeepCopy()
		Default(again)
		if !equality.Semantic.DeepEqual(created, again) {
			t.Fatal("a second Default changed the CloneSet")
		}
		_ = Validate(created, nil, pods)
		DefaultUpdate(cs, old)
		_ = Validate(cs, old, pods)
	})
}
