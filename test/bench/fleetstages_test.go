package bench

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// A Rollout shows the release started while Progressing, its steps done once finalising, and no milestone at
// rest.
func TestRolloutStage(t *testing.T) {
	rollout := func(phase string, canary map[string]any) *unstructured.Unstructured {
		status := map[string]any{"phase": phase}
		if canary != nil {
			status["canaryStatus"] = canary
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rollouts.kruise.io/v1beta1", "kind": "Rollout",
			"metadata": map[string]any{"name": "app-0001"}, "status": status}}
	}
	for _, tc := range []struct {
		obj  *unstructured.Unstructured
		want string
	}{
		{rollout("Healthy", map[string]any{"currentStepState": "Completed"}), ""},
		{rollout("Progressing", map[string]any{"currentStepIndex": int64(1), "currentStepState": "StepUpgrade"}), stageStarted},
		{rollout("Progressing", map[string]any{"currentStepState": "Completed", "finalisingStep": "RestoreStableService"}), stageStepped},
		{rollout("Progressing", nil), ""},
	} {
		name, got := rolloutStage(tc.obj)
		if name != "app-0001" || got != tc.want {
			t.Errorf("%v: stage %q of %q, want %q", tc.obj.Object["status"], got, name, tc.want)
		}
	}
	if name, got := rolloutStage(runtime.Object(nil)); name != "" || got != "" {
		t.Errorf("a non-Rollout shows %q %q", name, got)
	}
}

// Each span's median counts the applications seen at both of its ends; a span whose end came first (a stage
// passed unseen) is left out.
func TestStageMedians(t *testing.T) {
	begin := time.Unix(1000, 0)
	at := func(s int) time.Time { return begin.Add(time.Duration(s) * time.Second) }
	marks := map[string]map[string]time.Time{
		"a": {stageStarted: at(10), stageStepped: at(100), stageHealthy: at(130)},
		"b": {stageStarted: at(20), stageStepped: at(200), stageHealthy: at(210)},
		"c": {stageStarted: at(30), stageStepped: at(300)},
		"d": {stageHealthy: at(50)},
	}
	got := stageMedians(begin, marks)
	want := map[stageSpan]spanFigure{
		{"", stageStarted}:           {median: 20 * time.Second, n: 3},
		{stageStarted, stageStepped}: {median: 180 * time.Second, n: 3},
		{stageStepped, stageHealthy}: {median: 10 * time.Second, n: 2},
	}
	for s, w := range want {
		if got[s] != w {
			t.Errorf("%s -> %s: %+v, want %+v", s.from, s.to, got[s], w)
		}
	}
}
