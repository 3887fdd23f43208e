package cloneset

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
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
		r := newReconciler(feature.Resolve(gate), nil)
		if r.PreDownloadImages != tc.preDownload || r.RecreateOnVCTChange != tc.recreateOnVCT {
			t.Errorf("--feature-gates=%s: PreDownloadImages=%v RecreateOnVCTChange=%v", tc.flags, r.PreDownloadImages, r.RecreateOnVCTChange)
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
