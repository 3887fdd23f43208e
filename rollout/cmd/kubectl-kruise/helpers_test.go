package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// checkGolden compares got with testdata/<name>, or rewrites the file with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil { //nolint:gosec // test data, world-readable on purpose
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// step builds a canary step: replicas, optional traffic, pause seconds (-1: wait for approval).
func step(replicas string, traffic string, pause int32) rolloutsv1beta1.CanaryStep {
	s := rolloutsv1beta1.CanaryStep{Replicas: ptr.To(intstr.Parse(replicas))}
	if traffic != "" {
		s.Traffic = ptr.To(traffic)
	}
	if pause >= 0 {
		s.Pause.Duration = ptr.To(pause)
	}
	return s
}

// canaryRollout is a partition-style Rollout of three steps: 1 pod (approval), 50% (60s), 100%.
func canaryRollout() *rolloutsv1beta1.Rollout {
	return &rolloutsv1beta1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "apps", Generation: 1, ResourceVersion: "42"},
		Spec: rolloutsv1beta1.RolloutSpec{
			WorkloadRef: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Strategy: rolloutsv1beta1.RolloutStrategy{Canary: &rolloutsv1beta1.CanaryStrategy{
				Steps: []rolloutsv1beta1.CanaryStep{step("1", "", -1), step("50%", "", 60), step("100%", "", -1)},
			}},
		},
		Status: rolloutsv1beta1.RolloutStatus{ObservedGeneration: 1, Phase: rolloutsv1beta1.RolloutPhaseHealthy},
	}
}

// atStep puts ro's canary (or blue-green) status at a step and state, mid-release.
func atStep(ro *rolloutsv1beta1.Rollout, index int32, state rolloutsv1beta1.CanaryStepState) *rolloutsv1beta1.Rollout {
	common := rolloutsv1beta1.CommonStatus{
		CurrentStepIndex: index, CurrentStepState: state, NextStepIndex: index + 1, PodTemplateHash: "rev2",
		StableRevision: "rev1", LastUpdateTime: ptr.To(metav1.NewTime(testNow.Add(-20 * time.Second))),
	}
	if ro.Spec.Strategy.BlueGreen != nil {
		ro.Status.BlueGreenStatus = &rolloutsv1beta1.BlueGreenStatus{CommonStatus: common, UpdatedReplicas: 2, UpdatedReadyReplicas: 1}
	} else {
		ro.Status.CanaryStatus = &rolloutsv1beta1.CanaryStatus{CommonStatus: common, CanaryReplicas: 2, CanaryReadyReplicas: 1}
	}
	ro.Status.Phase = rolloutsv1beta1.RolloutPhaseProgressing
	ro.Status.CurrentStepIndex, ro.Status.CurrentStepState = index, state
	if state == rolloutsv1beta1.CanaryStepStateCompleted {
		ro.Status.Phase = rolloutsv1beta1.RolloutPhaseHealthy
	}
	return ro
}

func withCondition(ro *rolloutsv1beta1.Rollout, t rolloutsv1beta1.RolloutConditionType, s corev1.ConditionStatus, reason, msg string) *rolloutsv1beta1.Rollout {
	ro.Status.Conditions = append(ro.Status.Conditions, rolloutsv1beta1.RolloutCondition{Type: t, Status: s, Reason: reason, Message: msg})
	return ro
}

func blueGreenRollout() *rolloutsv1beta1.Rollout {
	ro := canaryRollout()
	ro.Spec.Strategy = rolloutsv1beta1.RolloutStrategy{BlueGreen: &rolloutsv1beta1.BlueGreenStrategy{
		Steps: []rolloutsv1beta1.CanaryStep{step("50%", "0%", -1), step("100%", "100%", -1)},
	}}
	return ro
}

// batchAt is the BatchRelease of canaryRollout at a 0-based batch of a 10-replica workload.
func batchAt(batch int32, state rolloutsv1beta1.BatchReleaseBatchStateType, updated, ready int32) *rolloutsv1beta1.BatchRelease {
	return &rolloutsv1beta1.BatchRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "apps"},
		Spec: rolloutsv1beta1.BatchReleaseSpec{ReleasePlan: rolloutsv1beta1.ReleasePlan{
			Batches: []rolloutsv1beta1.ReleaseBatch{
				{CanaryReplicas: intstr.FromInt32(1)}, {CanaryReplicas: intstr.FromString("50%")}, {CanaryReplicas: intstr.FromString("100%")},
			},
			BatchPartition: ptr.To(batch),
		}},
		Status: rolloutsv1beta1.BatchReleaseStatus{
			Phase:                    rolloutsv1beta1.RolloutPhaseProgressing,
			ObservedWorkloadReplicas: 10,
			CanaryStatus: rolloutsv1beta1.BatchReleaseCanaryStatus{
				CurrentBatch: batch, CurrentBatchState: state, UpdatedReplicas: updated, UpdatedReadyReplicas: ready,
			},
		},
	}
}
