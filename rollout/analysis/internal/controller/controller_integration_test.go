package controller

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/plan"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/provider"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

// canary is an APM-like endpoint whose error rate the test drives: each answer takes the next rate of the
// script, and the last one repeats.
type canary struct {
	mu     sync.Mutex
	rates  []float64
	served int
	auths  []string // the Authorization headers of the requests, in order
}

func (c *canary) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := min(c.served, len(c.rates)-1)
	c.served++
	c.auths = append(c.auths, r.Header.Get("Authorization"))
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"service":%q,"data":{"errorRate":%g}}`, r.URL.Query().Get("service"), c.rates[i])
}

func (c *canary) authorizations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.auths)
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// webMetric reads the error rate at url every second.
func webMetric(url string, count, failureLimit int32) analysisv1alpha1.Metric {
	return analysisv1alpha1.Metric{Name: "error-rate", Interval: dur(time.Second), Count: count, FailureLimit: failureLimit,
		SuccessCondition: "result < 0.05",
		Provider:         analysisv1alpha1.MetricProvider{Web: &analysisv1alpha1.WebMetric{URL: url, JSONPath: "{$.data.errorRate}"}}}
}

func newRun(name string, metrics ...analysisv1alpha1.Metric) *analysisv1alpha1.AnalysisRun {
	return &analysisv1alpha1.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: analysisv1alpha1.AnalysisRunSpec{Metrics: metrics}}
}

// A healthy canary passes: three measurements under the threshold, the run Successful with its conditions
// and events.
func TestWebMetricHealthy(t *testing.T) {
	t.Parallel()
	e := start(t)
	url := serve(t, &canary{rates: []float64{0.01, 0.02, 0.004}})
	started := time.Now()
	e.create(t, newRun("healthy", webMetric(url+"/metrics", 3, 0)))
	run := e.completed(t, "healthy")
	s := run.Status
	if s.Phase != analysisv1alpha1.AnalysisPhaseSuccessful || s.Message != "every metric successful" || s.CompletedAt == nil {
		t.Fatalf("run %s %q", s.Phase, s.Message)
	}
	res := plan.FindResult(&s, "error-rate")
	if res.Phase != analysisv1alpha1.AnalysisPhaseSuccessful || res.Count != 3 || res.Successful != 3 || len(res.Measurements) != 3 {
		t.Fatalf("metric %+v", res)
	}
	for i, want := range []string{"0.01", "0.02", "0.004"} {
		m := res.Measurements[i]
		if m.Value != want || m.Phase != analysisv1alpha1.AnalysisPhaseSuccessful || m.Index != int32(i+1) || m.FinishedAt == nil {
			t.Errorf("measurement %d: %+v", i+1, m)
		}
	}
	// One second between measurements, at least.
	if gap := res.Measurements[2].StartedAt.Sub(res.Measurements[0].FinishedAt.Time); gap < time.Second {
		t.Errorf("three measurements within %v", gap)
	}
	if took := s.CompletedAt.Sub(started); took > 20*time.Second {
		t.Errorf("the run took %v", took)
	}
	checkConditions(t, run, metav1.ConditionTrue, "Successful")
	e.waitEvent(t, "healthy", ReasonStarted)
	if note := e.waitEvent(t, "healthy", ReasonSuccessful); note != "every metric successful" {
		t.Errorf("AnalysisSuccessful note %q", note)
	}
}

// checkConditions checks the run's Completed condition is True and its Ready one ready (Stalled the opposite),
// all with reason and stamped with the run's generation, as status.observedGeneration is.
func checkConditions(t *testing.T, run *analysisv1alpha1.AnalysisRun, ready metav1.ConditionStatus, reason string) {
	t.Helper()
	stalled := metav1.ConditionTrue
	if ready == metav1.ConditionTrue {
		stalled = metav1.ConditionFalse
	}
	for ct, want := range map[string]metav1.ConditionStatus{analysisv1alpha1.AnalysisRunCompleted: metav1.ConditionTrue,
		analysisv1alpha1.AnalysisRunReady: ready, analysisv1alpha1.AnalysisRunStalled: stalled} {
		c := meta.FindStatusCondition(run.Status.Conditions, ct)
		if c == nil || c.Status != want || c.Reason != reason || c.ObservedGeneration != run.Generation {
			t.Errorf("condition %s: %+v", ct, c)
		}
	}
	if run.Status.ObservedGeneration != run.Generation {
		t.Errorf("observedGeneration %d of %d", run.Status.ObservedGeneration, run.Generation)
	}
}

// An error spike fails the run once more measurements failed than failureLimit allows; measuring stops.
func TestWebMetricFailureSpike(t *testing.T) {
	t.Parallel()
	e := start(t)
	spike := &canary{rates: []float64{0.01, 0.02, 0.3, 0.01, 0.4}}
	url := serve(t, spike)
	e.create(t, newRun("spike", webMetric(url, 0, 1)))
	run := e.completed(t, "spike")
	s := run.Status
	want := `metric "error-rate": 2 of 5 measurements failed, more than failureLimit 1`
	if s.Phase != analysisv1alpha1.AnalysisPhaseFailed || s.Message != want {
		t.Fatalf("run %s %q, want Failed %q", s.Phase, s.Message, want)
	}
	res := plan.FindResult(&s, "error-rate")
	var values []string
	for _, m := range res.Measurements {
		values = append(values, fmt.Sprintf("%s:%s", m.Value, m.Phase))
	}
	if got := strings.Join(values, " "); got != "0.01:Successful 0.02:Successful 0.3:Failed 0.01:Successful 0.4:Failed" {
		t.Errorf("measurements %s", got)
	}
	checkConditions(t, run, metav1.ConditionFalse, "Failed")
	if c := meta.FindStatusCondition(s.Conditions, analysisv1alpha1.AnalysisRunReady); c == nil || c.Message != want {
		t.Errorf("Ready %+v", c)
	}
	if note := e.waitEvent(t, "spike", ReasonFailed); note != want {
		t.Errorf("AnalysisFailed note %q", note)
	}
	if note := e.waitEvent(t, "spike", ReasonMetricCompleted); !strings.HasPrefix(note, "Metric error-rate Failed: 2 of 5") {
		t.Errorf("MetricCompleted note %q", note)
	}
	// A finished run measures no more.
	spike.mu.Lock()
	served := spike.served
	spike.mu.Unlock()
	time.Sleep(2500 * time.Millisecond)
	spike.mu.Lock()
	defer spike.mu.Unlock()
	if spike.served != served {
		t.Errorf("%d more requests after the run failed", spike.served-served)
	}
}

// A template's metric reads the run's arguments, one from a Secret; a ClusterAnalysisTemplate gives another.
func TestTemplatesAndArguments(t *testing.T) {
	t.Parallel()
	e := start(t)
	apm := &canary{rates: []float64{0.01}}
	url := serve(t, apm)
	e.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "apm"}, StringData: map[string]string{"token": "t0ken"}})
	tmpl := &analysisv1alpha1.AnalysisTemplate{ObjectMeta: metav1.ObjectMeta{Name: "apm"}, Spec: analysisv1alpha1.AnalysisTemplateSpec{
		Args: []analysisv1alpha1.Argument{{Name: "service"}, {Name: "token"}},
		Metrics: []analysisv1alpha1.Metric{{Name: "error-rate", Count: 1, SuccessCondition: "result < 0.05",
			Provider: analysisv1alpha1.MetricProvider{Web: &analysisv1alpha1.WebMetric{
				URL: url + "?service={{args.service}}", JSONPath: "{.data.errorRate}",
				Headers: []analysisv1alpha1.WebHeader{{Name: "Authorization", Value: "Bearer {{args.token}}"}}}}}},
	}}
	e.create(t, tmpl)
	clusterName := e.ns + "-service"
	e.create(t, &analysisv1alpha1.ClusterAnalysisTemplate{ObjectMeta: metav1.ObjectMeta{Name: clusterName}, Spec: analysisv1alpha1.AnalysisTemplateSpec{
		Args: []analysisv1alpha1.Argument{{Name: "service"}},
		Metrics: []analysisv1alpha1.Metric{{Name: "service-named", Count: 1, SuccessCondition: `result == "checkout"`,
			Provider: analysisv1alpha1.MetricProvider{Web: &analysisv1alpha1.WebMetric{URL: url + "?service={{args.service}}", JSONPath: "{.service}"}}}},
	}})
	e.create(t, &analysisv1alpha1.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Name: "templated"}, Spec: analysisv1alpha1.AnalysisRunSpec{
		Templates: []analysisv1alpha1.TemplateRef{{Name: "apm"}, {Name: clusterName, ClusterScope: true}},
		Args: []analysisv1alpha1.Argument{{Name: "service", Value: ptr.To("checkout")}, {Name: "token", ValueFrom: &analysisv1alpha1.ArgumentValueFrom{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "apm"}, Key: "token"}}}},
	}})
	run := e.completed(t, "templated")
	if run.Status.Phase != analysisv1alpha1.AnalysisPhaseSuccessful || len(run.Status.MetricResults) != 2 {
		t.Fatalf("run %s %q %+v", run.Status.Phase, run.Status.Message, run.Status.MetricResults)
	}
	if got := plan.FindResult(&run.Status, "service-named").Measurements[0].Value; got != `"checkout"` {
		t.Errorf("service-named measured %s", got)
	}
	// Two requests: the template's metric with the Secret's token, the cluster template's without.
	if got := apm.authorizations(); !slices.Contains(got, "Bearer t0ken") || len(got) != 2 {
		t.Errorf("Authorization headers %q", got)
	}
}

// A run that cannot be resolved ends in Error at once, saying why.
func TestUnresolvableRuns(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.create(t, &analysisv1alpha1.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Name: "no-template"}, Spec: analysisv1alpha1.AnalysisRunSpec{
		Templates: []analysisv1alpha1.TemplateRef{{Name: "missing"}}}})
	missingKey := webMetric("http://127.0.0.1:1/{{args.token}}", 1, 0)
	e.create(t, &analysisv1alpha1.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Name: "no-secret"}, Spec: analysisv1alpha1.AnalysisRunSpec{
		Metrics: []analysisv1alpha1.Metric{missingKey},
		Args: []analysisv1alpha1.Argument{{Name: "token", ValueFrom: &analysisv1alpha1.ArgumentValueFrom{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "token"}}}},
	}})
	for name, want := range map[string]string{"no-template": "AnalysisTemplate missing not found",
		"no-secret": fmt.Sprintf(`argument "token": Secret %s/nope not found`, e.ns)} {
		run := e.completed(t, name)
		if run.Status.Phase != analysisv1alpha1.AnalysisPhaseError || run.Status.Message != want {
			t.Errorf("%s: %s %q, want Error %q", name, run.Status.Phase, run.Status.Message, want)
		}
		if note := e.waitEvent(t, name, ReasonError); note != want {
			t.Errorf("%s: AnalysisError note %q", name, note)
		}
	}
}

// A provider that cannot be reached ends the metric in Error past consecutiveErrorLimit.
func TestProviderDown(t *testing.T) {
	t.Parallel()
	e := start(t)
	down := httptest.NewServer(http.NotFoundHandler())
	url := down.URL
	down.Close()
	m := webMetric(url, 0, 0)
	m.ConsecutiveErrorLimit = ptr.To[int32](1)
	e.create(t, newRun("down", m))
	run := e.completed(t, "down")
	res := plan.FindResult(&run.Status, "error-rate")
	if run.Status.Phase != analysisv1alpha1.AnalysisPhaseError || res.Error != 2 || !strings.Contains(res.Message, "connection refused") ||
		strings.Contains(res.Message, url) {
		t.Errorf("run %s %q, metric %+v", run.Status.Phase, run.Status.Message, res)
	}
}

// jobMetric runs a Job per measurement.
func jobMetric(name string) analysisv1alpha1.Metric {
	return analysisv1alpha1.Metric{Name: name, Count: 1, Provider: analysisv1alpha1.MetricProvider{Job: &analysisv1alpha1.JobMetric{
		Metadata: analysisv1alpha1.JobMetadata{Labels: map[string]string{"app": "smoke"}},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "smoke", Image: "curlimages/curl"}}}}},
	}}}
}

// waitJob waits for the Job of a run's metric's first measurement.
func (e *env) waitJob(t *testing.T, run *analysisv1alpha1.AnalysisRun, metric string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{}
	key := client.ObjectKey{Namespace: e.ns, Name: provider.JobName(run.Name, metric, 1)}
	managertest.Eventually(t, itTimeout, "the Job "+key.Name, func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, key, job)
		return err == nil, err
	})
	return job
}

// finishJob writes the status the Job controller would once the Job's pod succeeded or failed.
func (e *env) finishJob(t *testing.T, job *batchv1.Job, succeeded bool) {
	t.Helper()
	now := metav1.Now()
	job.Status.StartTime = &now
	job.Status.Active = 0
	final, target := batchv1.JobComplete, batchv1.JobSuccessCriteriaMet
	if succeeded {
		job.Status.Succeeded, job.Status.CompletionTime = 1, &now
	} else {
		job.Status.Failed, final, target = 1, batchv1.JobFailed, batchv1.JobFailureTarget
	}
	job.Status.Conditions = []batchv1.JobCondition{
		{Type: target, Status: corev1.ConditionTrue, Reason: "Finished", LastTransitionTime: now, LastProbeTime: now},
		{Type: final, Status: corev1.ConditionTrue, Reason: "Finished", Message: "the test says so", LastTransitionTime: now, LastProbeTime: now},
	}
	if !succeeded {
		job.Status.Conditions[0].Reason, job.Status.Conditions[1].Reason = "BackoffLimitExceeded", "BackoffLimitExceeded"
	}
	if err := e.c.Status().Update(t.Context(), job); err != nil {
		t.Fatal(err)
	}
}

// A Job metric: the run owns the measurement's Job, stays in progress while it runs, and takes its outcome.
func TestJobMetric(t *testing.T) {
	t.Parallel()
	e := start(t)
	ok := newRun("smoke-ok", jobMetric("smoke"))
	bad := newRun("smoke-bad", jobMetric("smoke"))
	e.create(t, ok)
	e.create(t, bad)
	for _, run := range []*analysisv1alpha1.AnalysisRun{ok, bad} {
		job := e.waitJob(t, run, "smoke")
		ref := metav1.GetControllerOf(job)
		if ref == nil || ref.UID != run.UID || ref.Kind != "AnalysisRun" || job.Labels["app"] != "smoke" ||
			job.Labels[provider.RunUIDLabel] != string(run.UID) || job.Labels[provider.MetricLabel] != "smoke" {
			t.Errorf("Job %s: owner %+v labels %v", job.Name, ref, job.Labels)
		}
		e.waitRun(t, run.Name, "the measurement in flight", func(s *analysisv1alpha1.AnalysisRunStatus) bool {
			res := plan.FindResult(s, "smoke")
			return s.Phase == analysisv1alpha1.AnalysisPhaseRunning && res != nil && plan.InFlight(res) != nil &&
				plan.InFlight(res).Metadata[provider.JobNameKey] == job.Name
		})
		e.finishJob(t, job, run == ok)
	}
	if got := e.completed(t, "smoke-ok"); got.Status.Phase != analysisv1alpha1.AnalysisPhaseSuccessful {
		t.Errorf("smoke-ok %s %q", got.Status.Phase, got.Status.Message)
	}
	got := e.completed(t, "smoke-bad")
	res := plan.FindResult(&got.Status, "smoke")
	if got.Status.Phase != analysisv1alpha1.AnalysisPhaseFailed ||
		res.Measurements[0].Message != fmt.Sprintf("Job %s failed: BackoffLimitExceeded: the test says so", provider.JobName("smoke-bad", "smoke", 1)) {
		t.Errorf("smoke-bad %s %q, measurement %+v", got.Status.Phase, got.Status.Message, res.Measurements)
	}
}

// Terminating a run ends it with the verdict so far and deletes the Job in flight.
func TestTerminate(t *testing.T) {
	t.Parallel()
	e := start(t)
	url := serve(t, &canary{rates: []float64{0.01, 0.3, 0.01}})
	run := newRun("until-stopped", webMetric(url, 0, 1), jobMetric("smoke"))
	e.create(t, run)
	job := e.waitJob(t, run, "smoke")
	e.waitRun(t, run.Name, "two measurements", func(s *analysisv1alpha1.AnalysisRunStatus) bool {
		res := plan.FindResult(s, "error-rate")
		return res != nil && res.Count >= 2
	})
	managertest.Update(t, e.c, run.DeepCopy(), func(cur *analysisv1alpha1.AnalysisRun) { cur.Spec.Terminate = true })
	got := e.completed(t, run.Name)
	if got.Status.Phase != analysisv1alpha1.AnalysisPhaseSuccessful || got.Status.Message != "terminated; no metric passed a limit" {
		t.Errorf("run %s %q", got.Status.Phase, got.Status.Message)
	}
	if res := plan.FindResult(&got.Status, "smoke"); len(res.Measurements) != 0 || !strings.HasPrefix(res.Message, "terminated after 0 measurements") {
		t.Errorf("smoke %+v", res)
	}
	managertest.Eventually(t, itTimeout, "the Job in flight deleted", func(ctx context.Context) (bool, error) {
		cur := &batchv1.Job{}
		err := e.c.Get(ctx, client.ObjectKeyFromObject(job), cur)
		return err != nil || cur.DeletionTimestamp != nil, err
	})
}
