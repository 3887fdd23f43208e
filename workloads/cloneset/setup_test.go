package cloneset

import (
	"testing"

	"github.com/flotilla-dev/flotilla/rollout/feature"
)

// Every gate the module reads is one of the manager's (feature.Gates panics on any other), and each option
// of the controller follows its own gate.
func TestReconcilerGates(t *testing.T) {
	for _, tc := range []struct {
		flags                      string
		preDownload, recreateOnVCT bool
	}{
		{flags: ""},
		{flags: "PreDownloadImageForInPlaceUpdate=true", preDownload: true},
		{flags: "RecreatePodWhenChangeVCTInCloneSetGate=true", recreateOnVCT: true},
	} {
		gate, err := feature.NewGate()
		if err != nil {
			t.Fatal(err)
		}
		if err := gate.Set(tc.flags); err != nil {
			t.Fatal(err)
		}
		r := newReconciler(feature.Resolve(gate))
		if r.PreDownloadImages != tc.preDownload || r.RecreateOnVCTChange != tc.recreateOnVCT {
			t.Errorf("--feature-gates=%s: PreDownloadImages=%v RecreateOnVCTChange=%v", tc.flags, r.PreDownloadImages, r.RecreateOnVCTChange)
		}
	}
}
