package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnalysisRunSpec is what one run measures: the metrics of the templates it names and its own, with the
// arguments they read.
// +kubebuilder:validation:XValidation:rule="(has(self.metrics) && size(self.metrics) > 0) || (has(self.templates) && size(self.templates) > 0)",message="a run needs metrics or templates"
type AnalysisRunSpec struct {
	// templates name AnalysisTemplates (of the run's namespace) or ClusterAnalysisTemplates whose metrics the
	// run measures beside its own. They are read at every measurement, so a change to a template applies to
	// the runs in progress from their next measurement.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Templates []TemplateRef `json:"templates,omitempty"`

	// args give values to the arguments the templates declare and to those the run's own metrics read;
	// arguments no metric reads are ignored.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Args []Argument `json:"args,omitempty"`

	// metrics are the run's own metrics; their names may not repeat the templates'.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Metrics []Metric `json:"metrics,omitempty"`

	// terminate stops a run in progress: no further measurements, and the run ends with the verdict of what
	// was measured (Successful unless a limit was passed). The only field that may change after creation.
	// +optional
	Terminate bool `json:"terminate,omitempty"`
}

// TemplateRef names an AnalysisTemplate or a ClusterAnalysisTemplate.
type TemplateRef struct {
	// name of the template.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// clusterScope names a ClusterAnalysisTemplate instead of an AnalysisTemplate of the run's namespace.
	// +optional
	ClusterScope bool `json:"clusterScope,omitempty"`
}

// AnalysisPhase is the phase of a run, of one of its metrics, or of one measurement.
// +kubebuilder:validation:Enum=Pending;Running;Successful;Failed;Inconclusive;Error
type AnalysisPhase string

const (
	// AnalysisPhasePending: not started yet.
	AnalysisPhasePending AnalysisPhase = "Pending"
	// AnalysisPhaseRunning: measuring (a measurement: still in flight, such as a Job that has not finished).
	AnalysisPhaseRunning AnalysisPhase = "Running"
	// AnalysisPhaseSuccessful: passed.
	AnalysisPhaseSuccessful AnalysisPhase = "Successful"
	// AnalysisPhaseFailed: failed its conditions (a metric or run: more failures than its failureLimit).
	AnalysisPhaseFailed AnalysisPhase = "Failed"
	// AnalysisPhaseInconclusive: neither condition held (a metric or run: more such measurements than its
	// inconclusiveLimit); a person decides.
	AnalysisPhaseInconclusive AnalysisPhase = "Inconclusive"
	// AnalysisPhaseError: could not be measured (a metric or run: too many errors in a row, or a spec that
	// cannot be resolved).
	AnalysisPhaseError AnalysisPhase = "Error"
)

// Completed reports whether the phase is final.
func (p AnalysisPhase) Completed() bool {
	switch p {
	case AnalysisPhaseSuccessful, AnalysisPhaseFailed, AnalysisPhaseInconclusive, AnalysisPhaseError:
		return true
	}
	return false
}

// AnalysisRunStatus is the observed state of an AnalysisRun; written by the controller only.
type AnalysisRunStatus struct {
	// observedGeneration is the metadata.generation the status was last computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase of the run: the worst phase of its metrics once one of them failed, erred or was inconclusive,
	// or all of them succeeded; Running before.
	// +optional
	Phase AnalysisPhase `json:"phase,omitempty"`

	// message says why the run is in its phase.
	// +optional
	Message string `json:"message,omitempty"`

	// startedAt is when the run started measuring.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// completedAt is when the run reached its final phase.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// untilTerminated is true while the run is Running and the only metrics still measuring are those without a
	// count, which measure until the run is terminated: it ends only when terminated (a step gate's run at the
	// end of its step's pause), Successful unless a metric passes a limit first.
	// +optional
	UntilTerminated bool `json:"untilTerminated,omitempty"`

	// metricResults hold each metric's counts and latest measurements.
	// +listType=map
	// +listMapKey=name
	// +optional
	MetricResults []MetricResult `json:"metricResults,omitempty"`

	// conditions: Completed (the run reached its final phase), Ready (the run succeeded) and Stalled (the run
	// ended otherwise), stamped with the generation they were computed from.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types of an AnalysisRun.
const (
	// AnalysisRunCompleted is True once the run reached its final phase; its reason is the phase.
	AnalysisRunCompleted = "Completed"
	// AnalysisRunReady is True when the run succeeded; False with the phase as its reason otherwise.
	AnalysisRunReady = "Ready"
	// AnalysisRunStalled is True, with the phase as its reason, when the run ended Failed, Inconclusive or
	// Error: kstatus (Flux, Helm --wait) then reports the run failed rather than in progress.
	AnalysisRunStalled = "Stalled"
)

// MeasurementRetention is how many of a metric's latest measurements its status keeps; the counts cover all.
const MeasurementRetention = 10

// MetricResult is one metric's record in its run.
type MetricResult struct {
	// name of the metric.
	// +required
	Name string `json:"name"`

	// phase of the metric.
	// +optional
	Phase AnalysisPhase `json:"phase,omitempty"`

	// message says why the metric is in its phase.
	// +optional
	Message string `json:"message,omitempty"`

	// count is the number of conclusive measurements: successful + failed.
	// +optional
	Count int32 `json:"count,omitempty"`
	// successful is the number of successful measurements.
	// +optional
	Successful int32 `json:"successful,omitempty"`
	// failed is the number of failed measurements.
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// inconclusive is the number of inconclusive measurements.
	// +optional
	Inconclusive int32 `json:"inconclusive,omitempty"`
	// error is the number of measurements that could not be taken.
	// +optional
	Error int32 `json:"error,omitempty"`
	// consecutiveError is the number of those in a row, up to the latest measurement.
	// +optional
	ConsecutiveError int32 `json:"consecutiveError,omitempty"`

	// measurements are the latest measurements, oldest first (at most MeasurementRetention).
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Measurements []Measurement `json:"measurements,omitempty"`
}

// Measurement is one measurement of a metric.
type Measurement struct {
	// index numbers the metric's measurements from 1, inconclusive ones and errors included.
	// +required
	Index int32 `json:"index"`

	// phase of the measurement: Running while a Job is in flight, then its verdict.
	// +required
	Phase AnalysisPhase `json:"phase"`

	// value is the measured result as JSON (a number, a list, an object), shortened past 256 characters.
	// +optional
	Value string `json:"value,omitempty"`

	// message says why the measurement has its phase: the condition that held, or the error.
	// +optional
	Message string `json:"message,omitempty"`

	// startedAt is when the measurement started.
	// +required
	StartedAt metav1.Time `json:"startedAt"`

	// finishedAt is when the measurement finished; unset while it runs.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`

	// metadata holds what the provider needs to find the measurement again, such as the Job's name.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="PHASE",type="string",JSONPath=".status.phase",description="The run's phase."
// +kubebuilder:printcolumn:name="MESSAGE",type="string",JSONPath=".status.message",description="Why the run is in its phase."
// +kubebuilder:printcolumn:name="STARTED",type="date",JSONPath=".status.startedAt",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"

// AnalysisRun measures a set of metrics until they pass, fail or are stopped, and records every verdict.
type AnalysisRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the run measures.
	// +required
	Spec AnalysisRunSpec `json:"spec"`
	// status records the run's progress and measurements.
	// +optional
	Status AnalysisRunStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// AnalysisRunList contains a list of AnalysisRun.
type AnalysisRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AnalysisRun `json:"items"`
}

func init() {
	register(&AnalysisRun{}, &AnalysisRunList{})
}
