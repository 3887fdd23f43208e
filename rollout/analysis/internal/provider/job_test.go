package provider

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

func TestJobName(t *testing.T) {
	if got := JobName("canary-7", "smoke", 3); got != "canary-7-smoke-3" {
		t.Errorf("short name %q", got)
	}
	long := strings.Repeat("r", 60) + "."
	a, b := JobName(long, "smoke", 1), JobName(long, "smoke", 2)
	if a == b || len(a) > 63 || len(validation.IsDNS1123Label(a)) > 0 {
		t.Errorf("long names %q and %q", a, b)
	}
	if JobName(long, "smoke", 1) != a {
		t.Error("the name is not deterministic")
	}
}

func TestJobOutcome(t *testing.T) {
	job := func(conds ...batchv1.JobCondition) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Status: batchv1.JobStatus{Active: 1, Conditions: conds}}
	}
	cases := []struct {
		name    string
		job     *batchv1.Job
		done    bool
		phase   analysisv1alpha1.AnalysisPhase
		message string
	}{
		{name: "running", job: job(), message: "Job j running: 1 active, 0 succeeded, 0 failed pods"},
		{name: "success criteria met, not yet complete", job: job(batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue}),
			message: "Job j running: 1 active, 0 succeeded, 0 failed pods"},
		{name: "complete", job: job(batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue},
			batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}),
			done: true, phase: analysisv1alpha1.AnalysisPhaseSuccessful, message: "Job j completed"},
		{name: "failed", job: job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded",
			Message: "Job has reached the specified backoff limit"}),
			done: true, phase: analysisv1alpha1.AnalysisPhaseFailed, message: "Job j failed: BackoffLimitExceeded: Job has reached the specified backoff limit"},
		{name: "failed without a message", job: job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded"}),
			done: true, phase: analysisv1alpha1.AnalysisPhaseFailed, message: "Job j failed: DeadlineExceeded"},
		{name: "a false condition", job: job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionFalse}),
			message: "Job j running: 1 active, 0 succeeded, 0 failed pods"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := jobOutcome(c.job)
			if o.Done != c.done || o.Phase != c.phase || o.Message != c.message {
				t.Errorf("outcome %+v, want done=%v %s %q", o, c.done, c.phase, c.message)
			}
		})
	}
}
