package admission

import (
	"encoding/json"
	"testing"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Any decodable UnitedDeployment, however malformed, is defaulted and validated without a panic.
func FuzzValidate(f *testing.F) {
	seed, _ := json.Marshal(valid())
	f.Add(seed, seed)
	f.Add([]byte(`{"spec":{"topology":{"subsets":[{"name":"a","replicas":"x%"},{"minReplicas":"50%","maxReplicas":-1}]}}}`), []byte(`{}`))
	f.Fuzz(func(_ *testing.T, cur, old []byte) {
		u, o := &kruiseappsv1alpha1.UnitedDeployment{}, &kruiseappsv1alpha1.UnitedDeployment{}
		if json.Unmarshal(cur, u) != nil || json.Unmarshal(old, o) != nil {
			return
		}
		Default(u, o)
		_ = Validate(u, o)
		_ = Validate(u, nil)
	})
}
