package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Metric is one health check of a release: what to measure, how often, and how to judge each measurement.
type Metric struct {
	// name identifies the metric within its template or run; it names the metric's Jobs, so it is a DNS label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// interval is the time between the end of one measurement and the start of the next. Required unless count
	// is 1.
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// initialDelay is how long after the run starts the first measurement waits.
	// +optional
	InitialDelay *metav1.Duration `json:"initialDelay,omitempty"`

	// count is how many conclusive measurements (successful or failed) the metric takes before it is done; 0
	// (the default) measures until the run is terminated. Inconclusive measurements (within inconclusiveLimit)
	// and those that could not be taken (within consecutiveErrorLimit) are repeated after interval: a metric of
	// count 1 polls until its answer is conclusive.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Count int32 `json:"count,omitempty"`

	// failureLimit is how many failed measurements the metric tolerates: one more fails it, and the run.
	// +kubebuilder:validation:Minimum=0
	// +optional
	FailureLimit int32 `json:"failureLimit,omitempty"`

	// inconclusiveLimit is how many inconclusive measurements the metric tolerates: one more makes it, and
	// the run, Inconclusive.
	// +kubebuilder:validation:Minimum=0
	// +optional
	InconclusiveLimit int32 `json:"inconclusiveLimit,omitempty"`

	// consecutiveErrorLimit is how many measurements in a row may fail to be taken (the provider unreachable,
	// a query or expression error) before the metric, and the run, end in Error; unset means 4.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ConsecutiveErrorLimit *int32 `json:"consecutiveErrorLimit,omitempty"`

	// successCondition is a CEL expression over `result` (the measured value) that is true when the
	// measurement is successful. Not used by the job provider, whose Job's outcome is the verdict.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	SuccessCondition string `json:"successCondition,omitempty"`

	// failureCondition is a CEL expression over `result` that is true when the measurement failed; it wins
	// over successCondition. Not used by the job provider.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	FailureCondition string `json:"failureCondition,omitempty"`

	// provider says where the measurement comes from; exactly one of its fields is set.
	// +required
	Provider MetricProvider `json:"provider"`
}

// DefaultConsecutiveErrorLimit is a metric's consecutiveErrorLimit when it sets none.
const DefaultConsecutiveErrorLimit = 4

// MetricProvider is the source of a metric's measurements; exactly one field is set.
type MetricProvider struct {
	// prometheus measures the result of a PromQL query.
	// +optional
	Prometheus *PrometheusMetric `json:"prometheus,omitempty"`
	// web measures a value read from an HTTP endpoint's JSON answer.
	// +optional
	Web *WebMetric `json:"web,omitempty"`
	// job runs a Kubernetes Job; the measurement succeeds when the Job completes and fails when it fails.
	// +optional
	Job *JobMetric `json:"job,omitempty"`
}

// PrometheusMetric is a PromQL query sent to a Prometheus server's HTTP API.
type PrometheusMetric struct {
	// address is the base URL of the Prometheus server, e.g. http://prometheus.monitoring:9090.
	// +kubebuilder:validation:MinLength=1
	// +required
	Address string `json:"address"`

	// query is the PromQL expression; {{args.<name>}} is replaced by the argument's value.
	// +kubebuilder:validation:MinLength=1
	// +required
	Query string `json:"query"`

	// range makes the query a range query (/api/v1/query_range) instead of an instant query (/api/v1/query).
	// +optional
	Range *PrometheusRange `json:"range,omitempty"`

	// timeout bounds one query; unset means 30s.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// tls configures the server's certificate check for an https address.
	// +optional
	TLS *TLSConfig `json:"tls,omitempty"`

	// bearerTokenSecretRef names a key of a Secret, in the run's namespace, whose value is sent as the
	// Authorization bearer token.
	// +optional
	BearerTokenSecretRef *corev1.SecretKeySelector `json:"bearerTokenSecretRef,omitempty"`
}

// PrometheusRange is the window of a range query, relative to the time of the measurement.
type PrometheusRange struct {
	// start is how long before the measurement the range starts, e.g. 10m.
	// +required
	Start metav1.Duration `json:"start"`
	// end is how long before the measurement the range ends; unset means at the measurement.
	// +optional
	End *metav1.Duration `json:"end,omitempty"`
	// step is the query resolution.
	// +required
	Step metav1.Duration `json:"step"`
}

// TLSConfig is how a provider checks the certificate of an https endpoint.
type TLSConfig struct {
	// insecureSkipVerify accepts any certificate; for tests only.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
	// caSecretRef names a key of a Secret, in the run's namespace, holding the PEM CA bundle to trust
	// instead of the system's.
	// +optional
	CASecretRef *corev1.SecretKeySelector `json:"caSecretRef,omitempty"`
}

// WebMethod is the HTTP method of a web metric.
// +kubebuilder:validation:Enum=GET;POST
type WebMethod string

const (
	// WebMethodGet sends a GET request.
	WebMethodGet WebMethod = "GET"
	// WebMethodPost sends a POST request with the metric's body.
	WebMethodPost WebMethod = "POST"
)

// WebMetric is an HTTP request whose JSON answer holds the measured value: a CI system, an APM API, a health
// endpoint.
type WebMetric struct {
	// url of the request; {{args.<name>}} is replaced by the argument's value.
	// +kubebuilder:validation:MinLength=1
	// +required
	URL string `json:"url"`

	// method is GET (the default) or POST.
	// +optional
	Method WebMethod `json:"method,omitempty"`

	// headers are added to the request; their values may use {{args.<name>}}, e.g. a token argument read from
	// a Secret.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Headers []WebHeader `json:"headers,omitempty"`

	// body is sent with a POST; it may use {{args.<name>}}.
	// +optional
	Body string `json:"body,omitempty"`

	// jsonPath selects the result in the JSON answer, in kubectl's JSONPath syntax, e.g. {$.data.errorRate}.
	// Unset, the whole answer is the result.
	// +optional
	JSONPath string `json:"jsonPath,omitempty"`

	// timeout bounds one request; unset means 30s.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// tls configures the server's certificate check for an https url.
	// +optional
	TLS *TLSConfig `json:"tls,omitempty"`
}

// WebHeader is one HTTP header of a web metric's request.
type WebHeader struct {
	// name of the header.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// value of the header.
	// +required
	Value string `json:"value"`
}

// JobMetric runs a Job for each measurement, owned by the AnalysisRun and named after it, the metric and the
// measurement's number.
type JobMetric struct {
	// metadata holds labels and annotations for the Job.
	// +optional
	Metadata JobMetadata `json:"metadata,omitempty"`

	// spec of the Job; {{args.<name>}} in its strings is replaced by the argument's value.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +required
	Spec batchv1.JobSpec `json:"spec"`
}

// JobMetadata holds the labels and annotations of a metric's Jobs.
type JobMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Argument is a named value that metrics read as {{args.<name>}}.
type Argument struct {
	// name of the argument.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_-]*$`
	// +required
	Name string `json:"name"`

	// value of the argument. In a template, a default the run may override; an argument a template declares
	// without value or valueFrom must be given by the run.
	// +optional
	Value *string `json:"value,omitempty"`

	// valueFrom reads the value from a Secret in the run's namespace.
	// +optional
	ValueFrom *ArgumentValueFrom `json:"valueFrom,omitempty"`
}

// ArgumentValueFrom is where an argument's value is read from.
type ArgumentValueFrom struct {
	// secretKeyRef names a key of a Secret in the run's namespace.
	// +required
	SecretKeyRef *corev1.SecretKeySelector `json:"secretKeyRef,omitempty"`
}
