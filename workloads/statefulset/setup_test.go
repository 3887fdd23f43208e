package statefulset

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
)

// Every gate the module reads is one of the manager's (feature.Gates panics on any other), and each option
// of the controller and the defaults follows its own gate, with upstream's defaults.
func TestGates(t *testing.T) {
	for _, tc := range []struct {
		flags                                                string
		startOrdinal, retainClaims, resizeClaims, indexLabel bool
		preDownload                                          bool
	}{
		{flags: "", retainClaims: true, indexLabel: true},
		{flags: "StatefulSetStartOrdinal=true", startOrdinal: true, retainClaims: true, indexLabel: true},
		{flags: "StatefulSetAutoDeletePVC=false,PodIndexLabel=false"},
		{flags: "StatefulSetAutoResizePVCGate=true", retainClaims: true, resizeClaims: true, indexLabel: true},
		{flags: "PreDownloadImageForInPlaceUpdate=true", retainClaims: true, indexLabel: true, preDownload: true},
	} {
		gate, err := feature.NewGate()
		if err != nil {
			t.Fatal(err)
		}
		if err := gate.Set(tc.flags); err != nil {
			t.Fatal(err)
		}
		gates := feature.Resolve(gate)
		r, opts := newReconciler(gates, nil), admissionOptions(gates)
		if r.StartOrdinal != tc.startOrdinal || r.RetainClaims != tc.retainClaims || r.ResizeClaims != tc.resizeClaims || r.IndexLabel != tc.indexLabel ||
			r.PreDownloadImages != tc.preDownload {
			t.Errorf("--feature-gates=%s: reconciler %+v", tc.flags, r)
		}
		if opts.AutoDeletePVC != tc.retainClaims || opts.AutoResizePVC != tc.resizeClaims {
			t.Errorf("--feature-gates=%s: admission options %+v", tc.flags, opts)
		}
	}
}

// The controller asks the modules' checks before an in-place update; without any it updates.
func TestReconcilerAsksTheInPlaceUpdateChecks(t *testing.T) {
	gate, err := feature.NewGate()
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := newReconciler(feature.Resolve(gate), nil).AllowInPlaceUpdate(context.Background(), &corev1.Pod{}); !ok || err != nil {
		t.Errorf("without checks: %v, %v", ok, err)
	}
	checks := &module.InPlaceUpdateChecks{}
	checks.Add(func(context.Context, *corev1.Pod) (bool, error) { return false, nil })
	if ok, err := newReconciler(feature.Resolve(gate), checks).AllowInPlaceUpdate(context.Background(), &corev1.Pod{}); ok || err != nil {
		t.Errorf("with a refusing check: %v, %v", ok, err)
	}
}
