package admission

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

func fuzzSeeds(t interface{ Fatal(...any) }) []string {
	b, err := json.Marshal(set())
	if err != nil {
		t.Fatal(err)
	}
	return []string{
		string(b),
		`{"spec":{"replicas":-1,"reserveOrdinals":[-3,"2-1","x","1-2147483648"],"podManagementPolicy":"x",` +
			`"scaleStrategy":{"maxUnavailable":"-0%"},"ordinals":{"start":-5},"updateStrategy":{"type":"OnDelete",` +
			`"rollingUpdate":{"partition":-1,"maxUnavailable":"%","minReadySeconds":999,"podUpdatePolicy":"InPlaceOnly",` +
			`"unorderedUpdate":{"priorityStrategy":{"weightPriority":[{"weight":101}],"orderPriority":[{}]}}}}}}`,
		`{"spec":{"volumeClaimUpdateStrategy":{"type":"OnPodRollingUpdate"},"volumeClaimTemplates":[{},{"spec":{"resources":{"requests":{"storage":"1e-9"}}}}],` +
			`"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"x"},"template":{"spec":{"containers":[{}]}}}}`,
	}
}

// FuzzValidate decodes arbitrary JSON as a new and a stored set, defaults and validates them as on create
// and on update: nothing may panic, and defaulting twice changes nothing.
func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, oldDoc, newDoc string) {
		old, cur := &kruiseappsv1beta1.StatefulSet{}, &kruiseappsv1beta1.StatefulSet{}
		_ = json.Unmarshal([]byte(oldDoc), old)
		_ = json.Unmarshal([]byte(newDoc), cur)
		Default(old, allGates)
		created := cur.DeepCopy()
		Default(created, allGates)
		again := created.DeepCopy()
		Default(again, allGates)
		if !equality.Semantic.DeepEqual(created, again) {
			t.Fatal("a second Default changed the set")
		}
		_ = Validate(created, nil)
		DefaultUpdate(cur, old, allGates)
		_ = Validate(cur, old)
		_ = ValidateExpansion(cur, old, nil)
	})
}
