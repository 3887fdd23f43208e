package rollout

import (
	"testing"

	"github.com/flotilla-dev/flotilla/rollout/feature"
)

// Every gate the engine reads is one of the manager's (feature.Gates panics on any other), and each field
// follows its own gate.
func TestEngineGates(t *testing.T) {
	gate, err := feature.NewGate()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readGates(feature.Resolve(gate)), (engineGates{advancedDeployment: true}); got != want {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	if err := gate.Set("AdvancedDeployment=false,KeepWorkloadPausedOnRolloutDeletion=true,RolloutHistory=true,AppendPodSelector=true"); err != nil {
		t.Fatal(err)
	}
	want := engineGates{keepPausedOnDelete: true, rolloutHistory: true, appendPodSelector: true}
	if got := readGates(feature.Resolve(gate)); got != want {
		t.Errorf("all flipped: %+v, want %+v", got, want)
	}
}
