package deletionprotection

import (
	"testing"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	dpadmission "github.com/flotilla-dev/flotilla/workloads/deletionprotection/admission"
)

func gates(t *testing.T, set string) feature.Gates {
	t.Helper()
	g, err := feature.NewGate()
	if err != nil {
		t.Fatal(err)
	}
	if set != "" {
		if err := g.Set(set); err != nil {
			t.Fatal(err)
		}
	}
	return feature.Resolve(g)
}

// Both gates are off by default, as upstream's; the CRD gate counts only with the main one, as upstream.
func TestOptionsFollowTheGates(t *testing.T) {
	tests := []struct {
		set  string
		want dpadmission.Options
	}{
		{"", dpadmission.Options{}},
		{"ResourcesDeletionProtection=true", dpadmission.Options{Enabled: true}},
		{"ResourcesDeletionProtection=true,DeletionProtectionForCRDCascadingGate=true", dpadmission.Options{Enabled: true, CRDCascading: true}},
		{"DeletionProtectionForCRDCascadingGate=true", dpadmission.Options{}},
	}
	for _, tc := range tests {
		if got := Options(gates(t, tc.set)); got != tc.want {
			t.Errorf("gates %q: %+v, want %+v", tc.set, got, tc.want)
		}
	}
}

// The refusal names the CRD gate by the manager's name for it.
func TestCRDGateName(t *testing.T) {
	if dpadmission.CRDCascadingGate != string(feature.DeletionProtectionForCRDCascadingGate) {
		t.Errorf("%q is not the gate's name %q", dpadmission.CRDCascadingGate, feature.DeletionProtectionForCRDCascadingGate)
	}
}
