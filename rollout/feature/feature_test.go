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

func TestResolvedGates(t *testing.T) {
	gate, err := NewGate()
	if err != nil {
		t.Fatal(err)
	}
	if err := gate.Set("RolloutHistory=true"); err != nil {
		t.Fatal(err)
	}
	gates := Resolve(gate)
	for name, spec := range Defaults {
		if want := spec.Default || name == RolloutHistory; gates.Enabled(name) != want {
			t.Errorf("%s = %v, want %v", name, gates.Enabled(name), want)
		}
	}
}

// A gate that is not in Defaults stops the wiring instead of reading as off.
func TestUnknownGatePanics(t *testing.T) {
	gate, err := NewGate()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("reading an unknown gate did not panic")
		}
	}()
	Resolve(gate).Enabled("AdvancedDeploymnet")
}

func TestImagePullJobsOn(t *testing.T) {
	for set, want := range map[string]bool{"": false, "ImagePullJobGate=true": true, "PreDownloadImageForInPlaceUpdate=true": true,
		"PreDownloadImageForDaemonSetUpdate=true": true} {
		gate, err := NewGate()
		if err != nil {
			t.Fatal(err)
		}
		if set != "" {
			if err := gate.Set(set); err != nil {
				t.Fatal(err)
			}
		}
		if got := Resolve(gate).ImagePullJobsOn(); got != want {
			t.Errorf("%q: ImagePullJobsOn = %v, want %v", set, got, want)
		}
	}
}
