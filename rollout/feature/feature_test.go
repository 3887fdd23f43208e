package feature

import "testing"

func TestNewGateDefaultsAndOverrides(t *testing.T) {
	gate, err := NewGate()
	if err != nil {
		t.Fatal(err)
	}
	if !gate.Enabled(AdvancedDeployment) || gate.Enabled(RolloutHistory) {
		t.Fatalf("unexpected defaults: AdvancedDeployment=%v RolloutHistory=%v",
			gate.Enabled(AdvancedDeployment), gate.Enabled(RolloutHistory))
	}
	if err := gate.Set("AdvancedDeployment=false,RolloutHistory=true"); err != nil {
		t.Fatal(err)
	}
	if gate.Enabled(AdvancedDeployment) || !gate.Enabled(RolloutHistory) {
		t.Fatal("overrides from --feature-gates were not applied")
	}
	if err := gate.Set("NoSuchGate=true"); err == nil {
		t.Fatal("an unknown gate must be rejected")
	}
}
