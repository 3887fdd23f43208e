package main

import (
	"strings"
	"testing"
	stdtime "time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

func binding(name, rollout string, age int) analysisv1alpha1.RolloutAnalysis {
	return analysisv1alpha1.RolloutAnalysis{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps", CreationTimestamp: metav1.NewTime(testNow.Add(-stdtime.Duration(age) * stdtime.Hour))},
		Spec:       analysisv1alpha1.RolloutAnalysisSpec{RolloutRef: analysisv1alpha1.RolloutRef{Name: rollout}},
	}
}

func TestRetryCommand(t *testing.T) {
	api := &fakeAPI{analyses: []analysisv1alpha1.RolloutAnalysis{binding("late", "demo", 1), binding("first", "demo", 2)}}
	code, out, errOut := runFake(t, api, "rollout", "retry", "rollout/demo")
	if code != 0 || !strings.Contains(out, "rollout.rollouts.kruise.io/demo retried (RolloutAnalysis first)") {
		t.Fatalf("code %d, out %q, err %q", code, out, errOut)
	}
	want := `first {"metadata":{"annotations":{"` + analysisv1alpha1.RetryAnnotation + `":"` + testNow.UTC().Format("2006-01-02T15:04:05Z07:00")
	if len(api.analysisPatch) != 1 || !strings.HasPrefix(api.analysisPatch[0], want[:len(want)-1]) {
		t.Errorf("patches %q, want one to the oldest binding setting %s", api.analysisPatch, analysisv1alpha1.RetryAnnotation)
	}
}

func TestRetryWithoutAnalysisFails(t *testing.T) {
	api := &fakeAPI{}
	code, _, errOut := runFake(t, api, "rollout", "retry", "rollout/demo")
	if code == 0 || !strings.Contains(errOut, `"demo" has no RolloutAnalysis: nothing to retry`) {
		t.Errorf("code %d, err %q; want a failure naming the missing RolloutAnalysis", code, errOut)
	}
}

func TestStatusShowsAnalysis(t *testing.T) {
	ra := binding("demo", "demo", 1)
	ra.Status = analysisv1alpha1.RolloutAnalysisStatus{Message: "step 2: run demo-v2-0-2 Running", Runs: []analysisv1alpha1.RolloutAnalysisRun{
		{Name: "demo-v2-0-bg", Step: 0, Phase: analysisv1alpha1.AnalysisPhaseRunning},
		{Name: "demo-v2-0-1", Step: 1, Phase: analysisv1alpha1.AnalysisPhaseSuccessful},
		{Name: "demo-v2-0-2", Step: 2},
	}}
	api := &fakeAPI{script: []*rolloutsv1beta1.Rollout{atStep(canaryRollout(), 2, rolloutsv1beta1.CanaryStepStateMetricsAnalysis)},
		analyses: []analysisv1alpha1.RolloutAnalysis{ra}}
	_, out, _ := runFake(t, api, "rollout", "status", "rollout/demo", "--watch=false")
	want := "Analysis: demo (background demo-v2-0-bg Running, step 1 demo-v2-0-1 Successful, step 2 demo-v2-0-2 Pending): step 2: run demo-v2-0-2 Running"
	if !strings.Contains(out, want) {
		t.Errorf("status output:\n%s\nwant the line %q", out, want)
	}
}
