package plan

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
)

func promProvider(query string) analysisv1alpha1.MetricProvider {
	return analysisv1alpha1.MetricProvider{Prometheus: &analysisv1alpha1.PrometheusMetric{Address: "http://prom:9090", Query: query}}
}

func TestArgRefs(t *testing.T) {
	p := analysisv1alpha1.MetricProvider{Web: &analysisv1alpha1.WebMetric{
		URL:     "https://ci.example/{{args.pipeline}}/status?rev={{ args.canary-revision }}",
		Headers: []analysisv1alpha1.WebHeader{{Name: "Authorization", Value: "Bearer {{args.token}}"}},
		Body:    `{"rev":"{{args.canary-revision}}"}`,
	}}
	if got, want := ArgRefs(p), []string{"canary-revision", "pipeline", "token"}; !slices.Equal(got, want) {
		t.Errorf("ArgRefs = %v, want %v", got, want)
	}
	if got := ArgRefs(promProvider("sum(rate(x[5m]))")); len(got) != 0 {
		t.Errorf("no references: %v", got)
	}
}

func TestSubstitute(t *testing.T) {
	values := map[string]string{"ns": "shop", "svc": `web"1`}
	got, err := Substitute(promProvider(`rate(errors{namespace="{{args.ns}}",service="{{ args.svc }}"}[1m])`), values)
	if err != nil {
		t.Fatal(err)
	}
	if want := `rate(errors{namespace="shop",service="web"1"}[1m])`; got.Prometheus.Query != want {
		t.Errorf("query %q, want %q", got.Prometheus.Query, want)
	}
	job := analysisv1alpha1.MetricProvider{Job: &analysisv1alpha1.JobMetric{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "check", Image: "curl", Args: []string{"{{args.ns}}.svc"}}}},
	}}}}
	got, err = Substitute(job, values)
	if err != nil {
		t.Fatal(err)
	}
	if a := got.Job.Spec.Template.Spec.Containers[0].Args; !slices.Equal(a, []string{"shop.svc"}) {
		t.Errorf("job args %v", a)
	}
	if _, err := Substitute(promProvider("x{a=\"{{args.missing}}\"}"), values); err == nil || err.Error() != `argument "missing" has no value` {
		t.Errorf("missing argument: %v", err)
	}
}

func metric(name string) analysisv1alpha1.Metric {
	return analysisv1alpha1.Metric{Name: name, Provider: promProvider("up")}
}

func TestResolve(t *testing.T) {
	tmpl := func(name string, cluster bool, args []analysisv1alpha1.Argument, metrics ...string) Template {
		spec := analysisv1alpha1.AnalysisTemplateSpec{Args: args}
		for _, m := range metrics {
			spec.Metrics = append(spec.Metrics, metric(m))
		}
		return Template{Ref: analysisv1alpha1.TemplateRef{Name: name, ClusterScope: cluster}, Spec: spec}
	}
	arg := func(name string, value *string) analysisv1alpha1.Argument {
		return analysisv1alpha1.Argument{Name: name, Value: value}
	}
	secretArg := analysisv1alpha1.Argument{Name: "token", ValueFrom: &analysisv1alpha1.ArgumentValueFrom{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "ci"}, Key: "token"}}}
	cases := []struct {
		name        string
		run         analysisv1alpha1.AnalysisRunSpec
		templates   []Template
		wantMetrics []string
		wantArgs    []analysisv1alpha1.Argument
		wantErr     string
	}{{
		name:        "templates first, then the run's own",
		run:         analysisv1alpha1.AnalysisRunSpec{Metrics: []analysisv1alpha1.Metric{metric("own")}},
		templates:   []Template{tmpl("a", false, nil, "a1", "a2"), tmpl("b", true, nil, "b1")},
		wantMetrics: []string{"a1", "a2", "b1", "own"},
	}, {
		name:      "a metric twice",
		run:       analysisv1alpha1.AnalysisRunSpec{Metrics: []analysisv1alpha1.Metric{metric("x")}},
		templates: []Template{tmpl("a", true, nil, "x")},
		wantErr:   `metric "x" is defined by ClusterAnalysisTemplate a and by the run`,
	}, {
		name: "the run's value wins over a default, defaults fill the rest",
		run: analysisv1alpha1.AnalysisRunSpec{Args: []analysisv1alpha1.Argument{arg("ns", ptr.To("shop")), secretArg},
			Metrics: []analysisv1alpha1.Metric{metric("own")}},
		templates: []Template{
			tmpl("a", false, []analysisv1alpha1.Argument{arg("ns", ptr.To("default")), arg("window", ptr.To("5m")), arg("token", nil)}, "a1"),
			tmpl("b", false, []analysisv1alpha1.Argument{arg("window", ptr.To("5m"))}, "b1"),
		},
		wantMetrics: []string{"a1", "b1", "own"},
		wantArgs:    []analysisv1alpha1.Argument{arg("ns", ptr.To("shop")), secretArg, arg("window", ptr.To("5m"))},
	}, {
		name:      "a declared argument without a value",
		templates: []Template{tmpl("a", false, []analysisv1alpha1.Argument{arg("canary", nil)}, "a1")},
		wantErr:   `argument "canary" of AnalysisTemplate a has no value: the run must give one`,
	}, {
		name: "different defaults",
		templates: []Template{tmpl("a", false, []analysisv1alpha1.Argument{arg("window", ptr.To("5m"))}, "a1"),
			tmpl("b", false, []analysisv1alpha1.Argument{arg("window", ptr.To("1m"))}, "b1")},
		wantErr: `argument "window" has different defaults in AnalysisTemplate a and AnalysisTemplate b: the run must give it`,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Resolve(&c.run, c.templates)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("error %v, want %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, m := range got.Metrics {
				names = append(names, m.Name)
			}
			if !slices.Equal(names, c.wantMetrics) {
				t.Errorf("metrics %v, want %v", names, c.wantMetrics)
			}
			if diff := cmp.Diff(c.wantArgs, got.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTemplateString(t *testing.T) {
	for _, c := range []struct {
		ref  analysisv1alpha1.TemplateRef
		want string
	}{{analysisv1alpha1.TemplateRef{Name: "a"}, "AnalysisTemplate a"}, {analysisv1alpha1.TemplateRef{Name: "a", ClusterScope: true}, "ClusterAnalysisTemplate a"}} {
		if got := (Template{Ref: c.ref}).String(); got != c.want {
			t.Errorf("%v: %q", c.ref, got)
		}
	}
}
