package admission

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/jsonpath"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/plan"
)

// maxRangePoints is the most points a range query may ask for: Prometheus refuses more than 11,000.
const maxRangePoints = 11000

// headerName is an HTTP header field name (RFC 9110 token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// validateMetrics checks a template's or run's metrics; declared are the arguments their strings may read.
func validateMetrics(metrics []analysisv1alpha1.Metric, declared sets.Set[string], path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range metrics {
		p := path.Index(i)
		if names.Has(metrics[i].Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), metrics[i].Name))
		}
		names.Insert(metrics[i].Name)
		errs = append(errs, validateMetric(&metrics[i], declared, p)...)
	}
	return errs
}

func validateMetric(m *analysisv1alpha1.Metric, declared sets.Set[string], path *field.Path) field.ErrorList {
	errs := validateName(m.Name, path.Child("name"))
	errs = append(errs, validateSchedule(m, path)...)
	errs = append(errs, validateConditions(m, path)...)
	errs = append(errs, validateProvider(&m.Provider, path.Child("provider"))...)
	for _, name := range plan.ArgRefs(m.Provider) {
		if !declared.Has(name) {
			errs = append(errs, field.Invalid(path.Child("provider"), "{{args."+name+"}}",
				fmt.Sprintf("refers to argument %q, which is not declared in args", name)))
		}
	}
	return errs
}

func validateName(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// validateSchedule: intervals and delays a run can keep, and an interval for a metric measured more than once.
func validateSchedule(m *analysisv1alpha1.Metric, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.Interval == nil && m.Count != 1 {
		errs = append(errs, field.Required(path.Child("interval"), "a metric measured more than once (count is not 1) needs an interval"))
	}
	if m.Interval != nil && m.Interval.Duration < plan.MinInterval {
		errs = append(errs, field.Invalid(path.Child("interval"), m.Interval.Duration.String(), "must be at least "+plan.MinInterval.String()))
	}
	errs = append(errs, nonNegative(m.InitialDelay, path.Child("initialDelay"))...)
	for _, n := range []struct {
		name string
		v    *int32
	}{{"count", &m.Count}, {"failureLimit", &m.FailureLimit}, {"inconclusiveLimit", &m.InconclusiveLimit}, {"consecutiveErrorLimit", m.ConsecutiveErrorLimit}} {
		if n.v != nil && *n.v < 0 {
			errs = append(errs, field.Invalid(path.Child(n.name), *n.v, "must be greater than or equal to 0"))
		}
	}
	return errs
}

func nonNegative(d *metav1.Duration, path *field.Path) field.ErrorList {
	if d != nil && d.Duration < 0 {
		return field.ErrorList{field.Invalid(path, d.Duration.String(), "must not be negative")}
	}
	return nil
}

func positive(d *metav1.Duration, path *field.Path) field.ErrorList {
	if d != nil && d.Duration <= 0 {
		return field.ErrorList{field.Invalid(path, d.Duration.String(), "must be positive")}
	}
	return nil
}

// validateConditions compiles the CEL conditions; a Job's outcome is its own verdict.
func validateConditions(m *analysisv1alpha1.Metric, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, c := range []struct{ name, expr string }{{"successCondition", m.SuccessCondition}, {"failureCondition", m.FailureCondition}} {
		if c.expr == "" {
			continue
		}
		if m.Provider.Job != nil {
			errs = append(errs, field.Forbidden(path.Child(c.name), "the job provider's verdict is its Job's outcome; conditions are not used"))
			continue
		}
		if _, err := plan.CompileCondition(path.Child(c.name), c.expr); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func validateProvider(p *analysisv1alpha1.MetricProvider, path *field.Path) field.ErrorList {
	var set []string
	var errs field.ErrorList
	if p.Prometheus != nil {
		set = append(set, "prometheus")
		errs = append(errs, validatePrometheus(p.Prometheus, path.Child("prometheus"))...)
	}
	if p.Web != nil {
		set = append(set, "web")
		errs = append(errs, validateWeb(p.Web, path.Child("web"))...)
	}
	if p.Job != nil {
		set = append(set, "job")
		errs = append(errs, validateJob(p.Job, path.Child("job"))...)
	}
	switch {
	case len(set) == 0:
		errs = append(errs, field.Required(path, "exactly one of prometheus, web and job is required"))
	case len(set) > 1:
		errs = append(errs, field.Forbidden(path, fmt.Sprintf("exactly one of prometheus, web and job may be set, not %v", set)))
	}
	return errs
}

func validatePrometheus(p *analysisv1alpha1.PrometheusMetric, path *field.Path) field.ErrorList {
	errs := validateURL(p.Address, path.Child("address"))
	if p.Query == "" {
		errs = append(errs, field.Required(path.Child("query"), ""))
	}
	if r := p.Range; r != nil {
		errs = append(errs, validateRange(r, path.Child("range"))...)
	}
	errs = append(errs, positive(p.Timeout, path.Child("timeout"))...)
	errs = append(errs, validateTLS(p.TLS, path.Child("tls"))...)
	return append(errs, validateSecretKey(p.BearerTokenSecretRef, path.Child("bearerTokenSecretRef"))...)
}

func validateRange(r *analysisv1alpha1.PrometheusRange, path *field.Path) field.ErrorList {
	var end time.Duration
	if r.End != nil {
		end = r.End.Duration
	}
	switch {
	case r.Step.Duration <= 0:
		return field.ErrorList{field.Invalid(path.Child("step"), r.Step.Duration.String(), "must be positive")}
	case end < 0:
		return field.ErrorList{field.Invalid(path.Child("end"), end.String(), "must not be negative")}
	case r.Start.Duration <= end:
		return field.ErrorList{field.Invalid(path.Child("start"), r.Start.Duration.String(),
			fmt.Sprintf("must be longer ago than end (%s): the range runs from start before the measurement to end before it", end))}
	case (r.Start.Duration-end)/r.Step.Duration > maxRangePoints:
		return field.ErrorList{field.Invalid(path.Child("step"), r.Step.Duration.String(),
			fmt.Sprintf("too fine for the range: more than %d points, which Prometheus refuses", maxRangePoints))}
	}
	return nil
}

func validateWeb(w *analysisv1alpha1.WebMetric, path *field.Path) field.ErrorList {
	errs := validateURL(w.URL, path.Child("url"))
	if !slices.Contains([]analysisv1alpha1.WebMethod{"", analysisv1alpha1.WebMethodGet, analysisv1alpha1.WebMethodPost}, w.Method) {
		errs = append(errs, field.NotSupported(path.Child("method"), w.Method, []analysisv1alpha1.WebMethod{analysisv1alpha1.WebMethodGet, analysisv1alpha1.WebMethodPost}))
	}
	if w.Body != "" && w.Method != analysisv1alpha1.WebMethodPost {
		errs = append(errs, field.Forbidden(path.Child("body"), "a body is sent with method POST only"))
	}
	for i, h := range w.Headers {
		if !headerName.MatchString(h.Name) {
			errs = append(errs, field.Invalid(path.Child("headers").Index(i).Child("name"), h.Name, "must be an HTTP header name"))
		}
	}
	if w.JSONPath != "" {
		if err := jsonpath.New("jsonPath").Parse(w.JSONPath); err != nil {
			errs = append(errs, field.Invalid(path.Child("jsonPath"), w.JSONPath, err.Error()))
		}
	}
	errs = append(errs, positive(w.Timeout, path.Child("timeout"))...)
	return append(errs, validateTLS(w.TLS, path.Child("tls"))...)
}

// validateURL: an absolute http or https URL, unless arguments fill it in (checked when measured).
func validateURL(raw string, path *field.Path) field.ErrorList {
	if raw == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	if plan.RefersToArgs(raw) {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return field.ErrorList{field.Invalid(path, raw, "must be an absolute http or https URL")}
	}
	return nil
}

func validateTLS(t *analysisv1alpha1.TLSConfig, path *field.Path) field.ErrorList {
	if t == nil {
		return nil
	}
	errs := validateSecretKey(t.CASecretRef, path.Child("caSecretRef"))
	if t.InsecureSkipVerify && t.CASecretRef != nil {
		errs = append(errs, field.Forbidden(path.Child("insecureSkipVerify"), "insecureSkipVerify ignores caSecretRef: set one of them"))
	}
	return errs
}

func validateSecretKey(s *corev1.SecretKeySelector, path *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "the Secret's name"))
	}
	if s.Key == "" {
		errs = append(errs, field.Required(path.Child("key"), "the Secret's key"))
	}
	return errs
}

// validateJob: what the API server would refuse when the first measurement creates the Job.
func validateJob(j *analysisv1alpha1.JobMetric, path *field.Path) field.ErrorList {
	spec := path.Child("spec", "template", "spec")
	var errs field.ErrorList
	if len(j.Spec.Template.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), "a Job needs a container"))
	}
	if rp := j.Spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyNever && rp != corev1.RestartPolicyOnFailure {
		errs = append(errs, field.NotSupported(spec.Child("restartPolicy"), rp, []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure}))
	}
	return errs
}
