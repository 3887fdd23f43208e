package v1alpha1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RolloutAnalysisSpec binds analysis to a Rollout without touching the Rollout: which steps are gated by
// which templates, what runs in the background of the whole release, what a failure does, and how long a
// step's pods may take to become ready. The analysis module's RolloutAnalysis controller creates the runs of
// the steps and of the background and reports them in the status; the Rollout engine reads that status to gate
// its steps (docs/analysis.md).
type RolloutAnalysisSpec struct {
	// rolloutRef names the Rollout, in the RolloutAnalysis's namespace. One RolloutAnalysis per Rollout.
	// +required
	RolloutRef RolloutRef `json:"rolloutRef"`

	// args are given to every run of the binding, after the built-in ones (namespace, rollout,
	// workload-kind, workload-name, stable-revision, canary-revision, step-index), which they may not
	// override; a step's or the background's own args win over these.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(a, !(a.name in ['namespace', 'rollout', 'workload-kind', 'workload-name', 'stable-revision', 'canary-revision', 'step-index']))",message="names a built-in argument (namespace, rollout, workload-kind, workload-name, stable-revision, canary-revision, step-index), which the binding gives and may not be set"
	// +optional
	Args []Argument `json:"args,omitempty"`

	// steps gate the Rollout's steps: when a step's pods are ready and its traffic is applied (upstream's
	// StepMetricsAnalysis state), a run of the step's templates starts, and the step moves on (to its pause,
	// or the next step) only once the run succeeded.
	// +listType=map
	// +listMapKey=step
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Steps []StepAnalysis `json:"steps,omitempty"`

	// background runs across the release, from its starting step until the release completes; its run
	// failing acts at once, whatever step the release is at.
	// +optional
	Background *BackgroundAnalysis `json:"background,omitempty"`

	// onFailure is what a failed (or erred) run does to the release: Abort (the default) or Pause. An
	// Inconclusive run always pauses, for a person to decide.
	// +kubebuilder:default=Abort
	// +optional
	OnFailure FailureAction `json:"onFailure,omitempty"`

	// progressDeadlineSeconds bounds how long a step's pods may take to become ready; past it the release
	// stalls (reason ProgressDeadlineExceeded, naming the pods and their container states) and, with
	// abortOnProgressDeadline, aborts. Unset: no deadline.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// abortOnProgressDeadline aborts the release when the progress deadline passes, instead of only stalling it.
	// +optional
	AbortOnProgressDeadline bool `json:"abortOnProgressDeadline,omitempty"`
}

// RolloutRef names a rollouts.kruise.io Rollout.
type RolloutRef struct {
	// name of the Rollout.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// StepAnalysis gates one step of a Rollout.
type StepAnalysis struct {
	// step is the index of the Rollout's step as the Rollout's status counts it (currentStepIndex, from 1).
	// +kubebuilder:validation:Minimum=1
	// +required
	Step int32 `json:"step"`

	// templates whose metrics the step's run measures.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +required
	Templates []TemplateRef `json:"templates"`

	// args for this step's run.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(a, !(a.name in ['namespace', 'rollout', 'workload-kind', 'workload-name', 'stable-revision', 'canary-revision', 'step-index']))",message="names a built-in argument (namespace, rollout, workload-kind, workload-name, stable-revision, canary-revision, step-index), which the binding gives and may not be set"
	// +optional
	Args []Argument `json:"args,omitempty"`
}

// BackgroundAnalysis runs across a release.
type BackgroundAnalysis struct {
	// templates whose metrics the background run measures; their metrics should measure until stopped
	// (count 0): the run is terminated when the release completes.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +required
	Templates []TemplateRef `json:"templates"`

	// startingStep is the step the background run starts at (from 1); unset, the release's first step.
	// +kubebuilder:validation:Minimum=1
	// +optional
	StartingStep *int32 `json:"startingStep,omitempty"`

	// args for the background run.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(a, !(a.name in ['namespace', 'rollout', 'workload-kind', 'workload-name', 'stable-revision', 'canary-revision', 'step-index']))",message="names a built-in argument (namespace, rollout, workload-kind, workload-name, stable-revision, canary-revision, step-index), which the binding gives and may not be set"
	// +optional
	Args []Argument `json:"args,omitempty"`
}

// FailureAction is what a failed run does to its release.
// +kubebuilder:validation:Enum=Abort;Pause
type FailureAction string

const (
	// FailureActionAbort sends all traffic back to stable, takes the canary pods away (canary batch scaled
	// back, or the partition restored) and leaves the workload's spec as the user wrote it; the Rollout shows
	// Stalled with reason AnalysisFailed until a retry or a new revision.
	FailureActionAbort FailureAction = "Abort"
	// FailureActionPause pauses the release at its step, as `kubectl kruise rollout pause` does.
	FailureActionPause FailureAction = "Pause"
)

// RolloutAnalysisStatus is the observed state of a RolloutAnalysis; written by its controller only.
type RolloutAnalysisStatus struct {
	// observedGeneration is the metadata.generation the status was last computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// canaryRevision is the revision of the release the runs below analyse.
	// +optional
	CanaryRevision string `json:"canaryRevision,omitempty"`

	// attempt counts the retries of the current release's analysis: 0 until the first retry, reset by a new
	// revision. It is part of the runs' names, so that each attempt gets runs of its own.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Attempt int32 `json:"attempt,omitempty"`

	// observedRetry is the value of the analysis.flotilla.dev/retry annotation last honoured.
	// +optional
	ObservedRetry string `json:"observedRetry,omitempty"`

	// progressDeadlineExceeded records, under abortOnProgressDeadline, the Rollout's word on the step whose pods
	// were not ready in time during the current attempt: the engine aborts the release while it is set. A retry
	// or a new revision clears it.
	// +optional
	ProgressDeadlineExceeded string `json:"progressDeadlineExceeded,omitempty"`

	// runs are the AnalysisRuns of the current release's current attempt: each step's, and the background's,
	// sorted by step.
	// +listType=map
	// +listMapKey=name
	// +optional
	Runs []RolloutAnalysisRun `json:"runs,omitempty"`

	// message says what the analysis of the current release is doing, or why it stopped it.
	// +optional
	Message string `json:"message,omitempty"`

	// conditions: Ready (the current release's analysis passed so far) and Stalled (it stopped the release:
	// reason AnalysisFailed or ProgressDeadlineExceeded), stamped with the generation they were computed from.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RolloutAnalysisRun is one AnalysisRun of a release.
type RolloutAnalysisRun struct {
	// name of the AnalysisRun.
	// +required
	Name string `json:"name"`
	// step the run gates; 0 for the background run.
	// +optional
	Step int32 `json:"step,omitempty"`
	// phase of the run, as it last was seen.
	// +optional
	Phase AnalysisPhase `json:"phase,omitempty"`
	// untilTerminated: the run measures until it is terminated (see AnalysisRunStatus), a step's at the end of
	// the step's pause.
	// +optional
	UntilTerminated bool `json:"untilTerminated,omitempty"`
}

// Reasons of a RolloutAnalysis's Stalled condition, and of the Rollout's when the binding stops a release.
const (
	// ReasonAnalysisFailed: a run of the release failed (or erred).
	ReasonAnalysisFailed = "AnalysisFailed"
	// ReasonProgressDeadlineExceeded: a step's pods did not become ready within progressDeadlineSeconds.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonConflict: another, older RolloutAnalysis names the same Rollout; this one acts on nothing.
	ReasonConflict = "Conflict"
	// ReasonRolloutNotFound (Ready False): the Rollout the RolloutAnalysis names does not exist.
	ReasonRolloutNotFound = "RolloutNotFound"
	// ReasonPassing (Ready True): no run of the current attempt failed, erred or was inconclusive.
	ReasonPassing = "Passing"
)

// Condition types of a RolloutAnalysis.
const (
	// RolloutAnalysisReady is True (reason Passing) while no run of the current attempt has failed, erred or
	// been inconclusive; False otherwise, with the run's phase (or RolloutNotFound, Conflict) as its reason.
	RolloutAnalysisReady = "Ready"
	// RolloutAnalysisStalled is True when a run failed or erred (reason AnalysisFailed) or when another
	// RolloutAnalysis names the same Rollout (reason Conflict).
	RolloutAnalysisStalled = "Stalled"
)

// RetryAnnotation on a RolloutAnalysis asks for the current release's analysis to start again: whenever its
// value (opaque; `kubectl kruise rollout retry` writes a timestamp) differs from status.observedRetry, the
// attempt goes up, the status forgets the runs of the previous attempt (they stay, for history; those still
// running are terminated) and new runs are created as the release reaches their steps.
const RetryAnnotation = "analysis.flotilla.dev/retry"

// Labels on the AnalysisRuns a RolloutAnalysis creates.
const (
	// RolloutAnalysisLabel names the RolloutAnalysis that created the run.
	RolloutAnalysisLabel = "analysis.flotilla.dev/rollout-analysis"
	// StepLabel is the step the run gates, "0" for the background run.
	StepLabel = "analysis.flotilla.dev/step"
)

// Built-in arguments every run of a RolloutAnalysis is given; the RolloutAnalysis's, a step's and the
// background's args may not override them.
const (
	ArgNamespace      = "namespace"
	ArgRollout        = "rollout"
	ArgWorkloadKind   = "workload-kind"
	ArgWorkloadName   = "workload-name"
	ArgStableRevision = "stable-revision"
	ArgCanaryRevision = "canary-revision"
	ArgStepIndex      = "step-index"
)

// BuiltinArgs are the built-in arguments' names, in the order runs list them.
var BuiltinArgs = []string{ArgNamespace, ArgRollout, ArgWorkloadKind, ArgWorkloadName, ArgStableRevision, ArgCanaryRevision, ArgStepIndex}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="ROLLOUT",type="string",JSONPath=".spec.rolloutRef.name",description="The Rollout the analysis gates."
// +kubebuilder:printcolumn:name="ON-FAILURE",type="string",JSONPath=".spec.onFailure"
// +kubebuilder:printcolumn:name="MESSAGE",type="string",JSONPath=".status.message"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"

// RolloutAnalysis binds metric analysis to a Rollout: its controller creates an AnalysisRun for each gated step
// the Rollout's release reaches and one for the background, and reports their phases in its status.
type RolloutAnalysis struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which analysis gates the Rollout's releases.
	// +required
	Spec RolloutAnalysisSpec `json:"spec"`
	// status reports the analysis of the current release.
	// +optional
	Status RolloutAnalysisStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// RolloutAnalysisList contains a list of RolloutAnalysis.
type RolloutAnalysisList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RolloutAnalysis `json:"items"`
}

func init() {
	register(&RolloutAnalysis{}, &RolloutAnalysisList{})
}

// CompareBinding orders RolloutAnalyses naming one Rollout: the one that binds it (the oldest, then the first
// by name) comes first. The controller, the engine and the CLI all pick it this way.
func CompareBinding(a, b *RolloutAnalysis) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}
