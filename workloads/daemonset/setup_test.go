package daemonset

import (
	"testing"

	"github.com/flotilla-dev/flotilla/rollout/feature"
)

// The gate the module reads is one of the manager's (feature.Gates panics on any other), and the controller's
// pre-download follows it.
func TestReconcilerGates(t *testing.T) {
	for flags, want := range map[string]bool{"": false, "PreDownloadImageForDaemonSetUpdate=true": true, "PreDownloadImageForInPlaceUpdate=true": false} {
		gate, err := feature.NewGate()
		if err != nil {
			t.Fatal(err)
		}
		if err := gate.Set(flags); err != nil {
			t.Fatal(err)
		}
		if got := newReconciler(feature.Resolve(gate)).PreDownloadImages; got != want {
			t.Errorf("--feature-gates=%s: PreDownloadImages=%v, want %v", flags, got, want)
		}
	}
}
