package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// RolloutSpec defines the desired state of a Rollout.
type RolloutSpec struct {
	// WorkloadRef identifies the workload released in batches by this Rollout; the Rollout works beside
	// the workload ("bypass") instead of owning it.
	WorkloadRef ObjectRef `json:"workloadRef"`

	// Strategy is how the next release of the workload proceeds.
	Strategy RolloutStrategy `json:"strategy"`

	// Disabled stops the Rollout from watching workload changes; a release in progress is finalised first.
	// +kubebuilder:validation:Optional
	// +kubebuilder:default=false
	Disabled bool `json:"disabled"`
}

// ObjectRef references a Kubernetes object in the Rollout's namespace.
type ObjectRef struct {
	// APIVersion of the referent.
	APIVersion string `json:"apiVersion"`
	// Kind of the referent.
	Kind string `json:"kind"`
	// Name of the referent.
	Name string `json:"name"`
}

// RolloutStrategy defines the strategy of the next release; exactly one of canary and blueGreen is
// expected (enforced by the validating webhook).
type RolloutStrategy struct {
	// Paused pauses the release at its current step until set back to false.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Canary releases the new revision step by step, in place (partition) or with an extra workload.
	// +optional
	Canary *CanaryStrategy `json:"canary,omitempty"`
	// BlueGreen brings up the new revision beside the old one and then switches traffic to it.
	// +optional
	BlueGreen *BlueGreenStrategy `json:"blueGreen,omitempty"`
}

// BlueGreenStrategy defines a blue-green release (Deployment and CloneSet only).
type BlueGreenStrategy struct {
	// Steps are the batches of the release, e.g. 20%, 40%, 60%, 80%, 100%.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	Steps []CanaryStep `json:"steps,omitempty"`
	// TrafficRoutings configures ingress, Gateway API or custom providers for fine-grained routing; only
	// one entry is supported.
	// +optional
	TrafficRoutings []TrafficRoutingRef `json:"trafficRoutings,omitempty"`
	// FailureThreshold is how many failed pods of the upgraded ones are tolerated before a step may
	// complete: an absolute number or a percentage. Nil means the workload's maxUnavailable.
	// +optional
	// +kubebuilder:validation:XIntOrString
	FailureThreshold *intstr.IntOrString `json:"failureThreshold,omitempty"`
	// TrafficRoutingRef names a TrafficRouting object. Kept for compatibility: the annotation
	// rollouts.kruise.io/trafficrouting is what selects a TrafficRouting.
	// +optional
	TrafficRoutingRef string `json:"trafficRoutingRef,omitempty"`
	// DisableGenerateCanaryService stops the creation of the "<service>-canary" Service.
	// +optional
	DisableGenerateCanaryService bool `json:"disableGenerateCanaryService,omitempty"`
}

// CanaryStrategy defines a replica-based canary release.
type CanaryStrategy struct {
	// Steps are the batches of the release, e.g. 20%, 40%, 60%, 80%, 100%.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	Steps []CanaryStep `json:"steps,omitempty"`
	// TrafficRoutings configures ingress, Gateway API or custom providers for fine-grained routing; only
	// one entry is supported.
	// +optional
	TrafficRoutings []TrafficRoutingRef `json:"trafficRoutings,omitempty"`
	// FailureThreshold is how many failed pods of the upgraded ones are tolerated before a step may
	// complete: an absolute number or a percentage. Nil means the workload's maxUnavailable.
	// +optional
	// +kubebuilder:validation:XIntOrString
	FailureThreshold *intstr.IntOrString `json:"failureThreshold,omitempty"`
	// PatchPodTemplateMetadata is merged into the pod template metadata of the canary Deployment
	// (canary-style Deployment releases only).
	// +optional
	PatchPodTemplateMetadata *PatchPodTemplateMetadata `json:"patchPodTemplateMetadata,omitempty"`
	// EnableExtraWorkloadForCanary releases a Deployment through an extra canary Deployment instead of
	// a partition; other workload kinds always use a partition.
	// +optional
	EnableExtraWorkloadForCanary bool `json:"enableExtraWorkloadForCanary,omitempty"`
	// TrafficRoutingRef names a TrafficRouting object. Kept for compatibility: the annotation
	// rollouts.kruise.io/trafficrouting is what selects a TrafficRouting.
	// +optional
	TrafficRoutingRef string `json:"trafficRoutingRef,omitempty"`
	// DisableGenerateCanaryService stops the creation of the "<service>-canary" Service.
	// +optional
	DisableGenerateCanaryService bool `json:"disableGenerateCanaryService,omitempty"`
}

// PatchPodTemplateMetadata is metadata merged into a pod template.
type PatchPodTemplateMetadata struct {
	// Annotations to add or overwrite.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels to add or overwrite.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// CanaryStep is one step (batch) of a release.
type CanaryStep struct {
	TrafficRoutingStrategy `json:",inline"`
	// Replicas is the number of pods of the new revision in this step: an absolute number or a
	// percentage of the workload's replicas.
	// +optional
	// +kubebuilder:validation:XIntOrString
	Replicas *intstr.IntOrString `json:"replicas,omitempty"`
	// Pause ends the step: after a duration, or by approval when no duration is set.
	// +optional
	Pause RolloutPause `json:"pause,omitempty"`
}

// TrafficRoutingStrategy is the traffic a step sends to the new revision.
type TrafficRoutingStrategy struct {
	// Traffic is the percentage of traffic routed to the new revision, e.g. "5%".
	// +optional
	Traffic *string `json:"traffic,omitempty"`
	// RequestHeaderModifier rewrites request headers (set, add, remove) of the routed requests.
	// +optional
	RequestHeaderModifier *gatewayv1.HTTPHeaderFilter `json:"requestHeaderModifier,omitempty"`
	// Matches route requests to the new revision when any one of them matches. When both matches
	// and traffic are set, matches take precedence.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Matches []HttpRouteMatch `json:"matches,omitempty"`
}

// HttpRouteMatch selects HTTP requests; all of its conditions must hold.
type HttpRouteMatch struct {
	// Path matches the request path (Istio, Gateway API). With Gateway API a match with a path is used
	// as a standalone rule match.
	// +optional
	Path *gatewayv1.HTTPPathMatch `json:"path,omitempty"`
	// Headers match request headers; all must match.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Headers []gatewayv1.HTTPHeaderMatch `json:"headers,omitempty"`
	// QueryParams match query parameters; all must match (Istio, MSE ingress, Gateway API).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	QueryParams []gatewayv1.HTTPQueryParamMatch `json:"queryParams,omitempty"`
}

// RolloutPause defines how a step ends.
type RolloutPause struct {
	// Duration is the number of seconds to wait before the next step; nil means wait for approval.
	// +optional
	Duration *int32 `json:"duration,omitempty"`
}

// RolloutStatus defines the observed state of a Rollout.
type RolloutStatus struct {
	// ObservedGeneration is the most recent generation observed for this Rollout.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// CanaryStatus is the state of a canary release.
	// +optional
	CanaryStatus *CanaryStatus `json:"canaryStatus,omitempty"`
	// BlueGreenStatus is the state of a blue-green release.
	// +optional
	BlueGreenStatus *BlueGreenStatus `json:"blueGreenStatus,omitempty"`
	// Conditions are the Rollout's conditions (Progressing, Succeeded, Terminating, ...).
	// +optional
	Conditions []RolloutCondition `json:"conditions,omitempty"`
	// Phase is the Rollout phase.
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`
	// Message tells why the Rollout is in its phase.
	// +optional
	Message string `json:"message,omitempty"`
	// CurrentStepIndex mirrors the sub-status' currentStepIndex for kubectl output. Always serialised.
	CurrentStepIndex int32 `json:"currentStepIndex"`
	// CurrentStepState mirrors the sub-status' currentStepState for kubectl output. Always serialised.
	CurrentStepState CanaryStepState `json:"currentStepState"`
}

// RolloutCondition describes an aspect of a Rollout's state.
type RolloutCondition struct {
	// Type of the condition.
	Type RolloutConditionType `json:"type"`
	// Status of the condition: True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// LastUpdateTime is the last time the condition was updated.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
	// LastTransitionTime is the last time the status changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a one-word reason for the last transition.
	Reason string `json:"reason"`
	// Message is a human-readable description of the transition.
	Message string `json:"message"`
}

// CommonStatus holds the fields shared by canary and blue-green release status. Several fields are
// always serialised because clients (Argo CD, kubectl-kruise, PaaS integrations) read or patch them.
type CommonStatus struct {
	// ObservedWorkloadGeneration is the most recent workload generation observed.
	// +optional
	ObservedWorkloadGeneration int64 `json:"observedWorkloadGeneration,omitempty"`
	// ObservedRolloutID is the rollout-id of the release this status describes.
	// +optional
	ObservedRolloutID string `json:"observedRolloutID,omitempty"`
	// RolloutHash is the hash of the step plan the status was computed from.
	// +optional
	RolloutHash string `json:"rolloutHash,omitempty"`
	// StableRevision is the revision of the stable pods.
	// +optional
	StableRevision string `json:"stableRevision,omitempty"`
	// PodTemplateHash of the new revision, used as a Service selector.
	PodTemplateHash string `json:"podTemplateHash"`
	// CurrentStepIndex is the 1-based step the release is on.
	// +optional
	CurrentStepIndex int32 `json:"currentStepIndex"`
	// NextStepIndex is the step after the current one, -1 after the last step and before a release.
	// Patching it to another existing step jumps to that step.
	NextStepIndex int32 `json:"nextStepIndex"`
	// FinalisingStep is the finalising sub-step in progress.
	FinalisingStep FinalisingStepType `json:"finalisingStep"`
	// CurrentStepState is the state of the current step; patching StepPaused to StepReady approves it.
	CurrentStepState CanaryStepState `json:"currentStepState"`
	// Message describes the current step.
	// +optional
	Message string `json:"message,omitempty"`
	// LastUpdateTime is when the step state last changed; pause durations count from it.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
}

// CanaryStatus is the state of a canary release.
type CanaryStatus struct {
	CommonStatus `json:",inline"`
	// CanaryRevision is the revision of the new pods as computed by the Rollout.
	CanaryRevision string `json:"canaryRevision"`
	// CanaryReplicas is the number of pods of the new revision.
	// +kubebuilder:validation:Minimum=0
	CanaryReplicas int32 `json:"canaryReplicas"`
	// CanaryReadyReplicas is the number of ready pods of the new revision.
	// +kubebuilder:validation:Minimum=0
	CanaryReadyReplicas int32 `json:"canaryReadyReplicas"`
}

// BlueGreenStatus is the state of a blue-green release.
type BlueGreenStatus struct {
	CommonStatus `json:",inline"`
	// UpdatedRevision is the revision of the new pods as computed by the Rollout.
	UpdatedRevision string `json:"updatedRevision"`
	// UpdatedReplicas is the number of pods of the new revision.
	// +kubebuilder:validation:Minimum=0
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// UpdatedReadyReplicas is the number of ready pods of the new revision.
	// +kubebuilder:validation:Minimum=0
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas"`
}

// Rollout drives the batch release of a workload and its traffic.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="STATUS",type="string",JSONPath=".status.phase",description="The rollout status phase"
// +kubebuilder:printcolumn:name="CANARY_STEP",type="integer",JSONPath=".status.currentStepIndex",description="The rollout canary status step"
// +kubebuilder:printcolumn:name="CANARY_STATE",type="string",JSONPath=".status.currentStepState",description="The rollout canary status step state"
// +kubebuilder:printcolumn:name="MESSAGE",type="string",JSONPath=".status.message",description="The rollout canary status message"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=".metadata.creationTimestamp"
type Rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RolloutSpec   `json:"spec,omitempty"`
	Status RolloutStatus `json:"status,omitempty"`
}

// RolloutList contains a list of Rollout.
// +kubebuilder:object:root=true
type RolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Rollout `json:"items"`
}

// Hub marks Rollout v1beta1 as the version the other versions convert through.
func (*Rollout) Hub() {}

func init() {
	register(&Rollout{}, &RolloutList{})
}
