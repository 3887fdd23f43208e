package admission

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// errorRate is a valid Prometheus metric reading the argument service.
func errorRate() analysisv1alpha1.Metric {
	return analysisv1alpha1.Metric{Name: "error-rate", Interval: dur(30 * time.Second), FailureLimit: 1,
		SuccessCondition: "result < 0.05",
		Provider: analysisv1alpha1.MetricProvider{Prometheus: &analysisv1alpha1.PrometheusMetric{
			Address: "http://prometheus.monitoring:9090",
			Query:   `sum(rate(http_requests_total{service="{{args.service}}",code=~"5.."}[1m])) / sum(rate(http_requests_total{service="{{args.service}}"}[1m]))`,
		}}}
}

func ciGate() analysisv1alpha1.Metric {
	return analysisv1alpha1.Metric{Name: "ci", Count: 1, SuccessCondition: `result == "passed"`,
		Provider: analysisv1alpha1.MetricProvider{Web: &analysisv1alpha1.WebMetric{URL: "https://ci.example/api/status",
			JSONPath: "{$.state}", Headers: []analysisv1alpha1.WebHeader{{Name: "Authorization", Value: "Bearer {{args.token}}"}}}}}
}

func smokeJob() analysisv1alpha1.Metric {
	return analysisv1alpha1.Metric{Name: "smoke", Count: 1, Provider: analysisv1alpha1.MetricProvider{Job: &analysisv1alpha1.JobMetric{
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "smoke", Image: "curlimages/curl", Args: []string{"http://{{args.service}}/healthz"}}}}}}}}}
}

func template(mutate func(*analysisv1alpha1.AnalysisTemplateSpec)) *analysisv1alpha1.AnalysisTemplate {
	t := &analysisv1alpha1.AnalysisTemplate{Spec: analysisv1alpha1.AnalysisTemplateSpec{
		Args: []analysisv1alpha1.Argument{{Name: "service"}, {Name: "token", ValueFrom: &analysisv1alpha1.ArgumentValueFrom{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "ci"}, Key: "token"}}}},
		Metrics: []analysisv1alpha1.Metric{errorRate(), ciGate(), smokeJob()},
	}}
	if mutate != nil {
		mutate(&t.Spec)
	}
	return t
}

func TestValidateTemplate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*analysisv1alpha1.AnalysisTemplateSpec)
		want   []string
	}{
		{name: "valid"},
		{name: "no metric", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) { s.Metrics = nil },
			want: []string{"spec.metrics: Required value: a template needs a metric"}},
		{name: "successCondition does not compile", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) { s.Metrics[0].SuccessCondition = "result <" },
			want: []string{`spec.metrics[0].successCondition: Invalid value: "result <": ERROR: <input>:1:9: Syntax error`}},
		{name: "failureCondition not a bool", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) { s.Metrics[1].FailureCondition = `"failed"` },
			want: []string{`spec.metrics[1].failureCondition: Invalid value: "\"failed\"": must evaluate to a bool, not string`}},
		{name: "conditions on a job", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) { s.Metrics[2].SuccessCondition = "true" },
			want: []string{"spec.metrics[2].successCondition: Forbidden: the job provider's verdict is its Job's outcome; conditions are not used"}},
		{name: "duplicate metric", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) { s.Metrics[1].Name = "error-rate" },
			want: []string{`spec.metrics[1].name: Duplicate value: "error-rate"`}},
		{name: "metric name not a DNS label", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) { s.Metrics[0].Name = "Error_Rate" },
			want: []string{`spec.metrics[0].name: Invalid value: "Error_Rate": a lowercase RFC 1123 label`}},
		{name: "no provider", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) { s.Metrics[0].Provider.Prometheus = nil },
			want: []string{"spec.metrics[0].provider: Required value: exactly one of prometheus, web and job is required"}},
		{name: "two providers", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) { s.Metrics[1].Provider.Job = smokeJob().Provider.Job },
			want: []string{"spec.metrics[1].successCondition: Forbidden", "spec.metrics[1].provider: Forbidden: exactly one of prometheus, web and job may be set, not [web job]"}},
		{name: "undeclared argument", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) { s.Args = s.Args[1:] },
			want: []string{`spec.metrics[0].provider: Invalid value: "{{args.service}}": refers to argument "service", which is not declared in args`,
				`spec.metrics[2].provider: Invalid value: "{{args.service}}"`}},
		{name: "no interval for a metric measured until stopped", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) { s.Metrics[0].Interval = nil },
			want: []string{"spec.metrics[0].interval: Required value: a metric measured more than once (count is not 1) needs an interval"}},
		{name: "interval too short", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) { s.Metrics[0].Interval = dur(time.Millisecond) },
			want: []string{`spec.metrics[0].interval: Invalid value: "1ms": must be at least 1s`}},
		{name: "negative limits and delay", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) {
			s.Metrics[0].FailureLimit, s.Metrics[0].ConsecutiveErrorLimit, s.Metrics[0].InitialDelay = -1, ptr.To[int32](-2), dur(-time.Second)
		}, want: []string{`spec.metrics[0].initialDelay: Invalid value: "-1s": must not be negative`,
			"spec.metrics[0].failureLimit: Invalid value: -1: must be greater than or equal to 0",
			"spec.metrics[0].consecutiveErrorLimit: Invalid value: -2: must be greater than or equal to 0"}},
		{name: "address not a URL", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) {
			s.Metrics[0].Provider.Prometheus.Address = "prometheus:9090"
		},
			want: []string{`spec.metrics[0].provider.prometheus.address: Invalid value: "prometheus:9090": must be an absolute http or https URL`}},
		{name: "an address from an argument is checked when measured", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) {
			s.Metrics[0].Provider.Prometheus.Address = "{{args.service}}"
		}},
		{name: "range the wrong way round", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) {
			s.Metrics[0].Provider.Prometheus.Range = &analysisv1alpha1.PrometheusRange{Start: metav1.Duration{Duration: time.Minute}, End: dur(2 * time.Minute), Step: metav1.Duration{Duration: time.Second}}
		}, want: []string{`spec.metrics[0].provider.prometheus.range.start: Invalid value: "1m0s": must be longer ago than end (2m0s)`}},
		{name: "range with too many points", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) {
			s.Metrics[0].Provider.Prometheus.Range = &analysisv1alpha1.PrometheusRange{Start: metav1.Duration{Duration: 24 * time.Hour}, Step: metav1.Duration{Duration: time.Second}}
		}, want: []string{`spec.metrics[0].provider.prometheus.range.step: Invalid value: "1s": too fine for the range: more than 11000 points`}},
		{name: "range without step", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) {
			s.Metrics[0].Provider.Prometheus.Range = &analysisv1alpha1.PrometheusRange{Start: metav1.Duration{Duration: time.Hour}}
		}, want: []string{`spec.metrics[0].provider.prometheus.range.step: Invalid value: "0s": must be positive`}},
		{name: "secret without key, TLS both ways", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) {
			ref := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "prom"}}
			s.Metrics[0].Provider.Prometheus.BearerTokenSecretRef = ref
			s.Metrics[0].Provider.Prometheus.TLS = &analysisv1alpha1.TLSConfig{InsecureSkipVerify: true, CASecretRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}, Key: "ca.crt"}}
		}, want: []string{"spec.metrics[0].provider.prometheus.tls.insecureSkipVerify: Forbidden: insecureSkipVerify ignores caSecretRef",
			"spec.metrics[0].provider.prometheus.bearerTokenSecretRef.key: Required value: the Secret's key"}},
		{name: "web body with GET, bad header, bad JSONPath", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) {
			w := s.Metrics[1].Provider.Web
			w.Body, w.JSONPath, w.Headers[0].Name = "{}", "{$.state", "Bad Header"
		}, want: []string{"spec.metrics[1].provider.web.body: Forbidden: a body is sent with method POST only",
			`spec.metrics[1].provider.web.headers[0].name: Invalid value: "Bad Header": must be an HTTP header name`,
			`spec.metrics[1].provider.web.jsonPath: Invalid value: "{$.state": unclosed action`}},
		{name: "job without restart policy and containers", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) {
			s.Metrics[2].Provider.Job.Spec.Template.Spec = corev1.PodSpec{}
		}, want: []string{"spec.metrics[2].provider.job.spec.template.spec.containers: Required value: a Job needs a container",
			`spec.metrics[2].provider.job.spec.template.spec.restartPolicy: Unsupported value: ""`}},
		{name: "argument with value and valueFrom", mutate: func(s *analysisv1alpha1.AnalysisTemplateSpec) { s.Args[1].Value = ptr.To("x") },
			want: []string{"spec.args[1].valueFrom: Forbidden: an argument has a value or a valueFrom, not both"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkErrors(t, ValidateTemplate(template(c.mutate), nil).ToAggregate(), c.want)
			cluster := &analysisv1alpha1.ClusterAnalysisTemplate{Spec: template(c.mutate).Spec}
			checkErrors(t, ValidateClusterTemplate(cluster, nil).ToAggregate(), c.want)
		})
	}
}

// checkErrors checks that err holds each of want (as a prefix of one of its errors), and nothing else.
func checkErrors(t *testing.T, err error, want []string) {
	t.Helper()
	var got []string
	if err != nil {
		got = strings.Split(strings.Trim(err.Error(), "[]"), ", spec.")
	}
	if len(got) != len(want) {
		t.Fatalf("errors %v, want %d: %v", err, len(want), want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("errors %v lack %q", err, w)
		}
	}
}

// Errors a stored template already had do not block its update.
func TestValidateTemplateRatchets(t *testing.T) {
	old := template(func(s *analysisv1alpha1.AnalysisTemplateSpec) { s.Metrics[0].Interval = dur(time.Millisecond) })
	cur := old.DeepCopy()
	cur.Spec.Metrics[1].Count = 2
	cur.Spec.Metrics[1].Interval = dur(time.Minute)
	if errs := ValidateTemplate(cur, old); len(errs) != 0 {
		t.Errorf("update refused for an old error: %v", errs)
	}
	cur.Spec.Metrics[1].SuccessCondition = "result ="
	if errs := ValidateTemplate(cur, old); len(errs) != 1 {
		t.Errorf("a new error let through: %v", errs)
	}
}

func run(mutate func(*analysisv1alpha1.AnalysisRunSpec)) *analysisv1alpha1.AnalysisRun {
	r := &analysisv1alpha1.AnalysisRun{Spec: analysisv1alpha1.AnalysisRunSpec{
		Templates: []analysisv1alpha1.TemplateRef{{Name: "http"}, {Name: "http", ClusterScope: true}},
		Args:      []analysisv1alpha1.Argument{{Name: "service", Value: ptr.To("checkout")}},
		Metrics:   []analysisv1alpha1.Metric{errorRate()},
	}}
	if mutate != nil {
		mutate(&r.Spec)
	}
	return r
}

func TestValidateRun(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*analysisv1alpha1.AnalysisRunSpec)
		want   []string
	}{
		{name: "valid"},
		{name: "templates only", mutate: func(s *analysisv1alpha1.AnalysisRunSpec) { s.Metrics = nil }},
		{name: "nothing to measure", mutate: func(s *analysisv1alpha1.AnalysisRunSpec) { s.Metrics, s.Templates = nil, nil },
			want: []string{"spec.metrics: Required value: a run needs metrics or templates"}},
		{name: "argument without value", mutate: func(s *analysisv1alpha1.AnalysisRunSpec) { s.Args[0].Value = nil },
			want: []string{"spec.args[0].value: Required value: a run's argument needs a value or a valueFrom"}},
		{name: "own metric reads an argument the run lacks", mutate: func(s *analysisv1alpha1.AnalysisRunSpec) { s.Args = nil },
			want: []string{`spec.metrics[0].provider: Invalid value: "{{args.service}}": refers to argument "service", which is not declared in args`}},
		{name: "a template twice", mutate: func(s *analysisv1alpha1.AnalysisRunSpec) { s.Templates[1].ClusterScope = false },
			want: []string{`spec.templates[1]: Duplicate value: "http"`}},
		{name: "a metric's CEL", mutate: func(s *analysisv1alpha1.AnalysisRunSpec) { s.Metrics[0].SuccessCondition = "result.foo(" },
			want: []string{`spec.metrics[0].successCondition: Invalid value: "result.foo(": ERROR:`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkErrors(t, ValidateRun(run(c.mutate), nil).ToAggregate(), c.want)
		})
	}
}

func TestValidateRunUpdate(t *testing.T) {
	old := run(nil)
	terminated := run(func(s *analysisv1alpha1.AnalysisRunSpec) { s.Terminate = true })
	if errs := ValidateRun(terminated, old); len(errs) != 0 {
		t.Errorf("terminate refused: %v", errs)
	}
	checkErrors(t, ValidateRun(old, terminated).ToAggregate(), []string{"spec.terminate: Forbidden: a terminated run stays terminated"})
	changed := run(func(s *analysisv1alpha1.AnalysisRunSpec) { s.Metrics[0].FailureLimit = 5 })
	checkErrors(t, ValidateRun(changed, old).ToAggregate(), []string{"spec: Forbidden: an AnalysisRun's spec may not change but for terminate: create a new run"})
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{"team": "shop"}
	if errs := ValidateRun(labelled, old); len(errs) != 0 {
		t.Errorf("a metadata change refused: %v", errs)
	}
}

func TestValidateNil(t *testing.T) {
	if len(ValidateRun(nil, nil)) != 1 || len(ValidateTemplate(nil, nil)) != 1 || len(ValidateClusterTemplate(nil, nil)) != 1 {
		t.Error("a nil object accepted")
	}
}
