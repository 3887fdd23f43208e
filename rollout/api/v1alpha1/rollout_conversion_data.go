package v1alpha1

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// rolloutHubData is what a v1beta1 Rollout holds and its v1alpha1 form cannot express. It travels in
// ConversionDataAnnotation on v1alpha1 objects. Each part is restored only while the v1alpha1 fields it
// depends on still hold what the conversion wrote, so edits of an old client win over saved data.
// +kubebuilder:object:generate=false
type rolloutHubData struct {
	// Spec and Status are the whole v1beta1 spec and status of a blue-green Rollout.
	Spec   *rolloutsv1beta1.RolloutSpec   `json:"spec,omitempty"`
	Status *rolloutsv1beta1.RolloutStatus `json:"status,omitempty"`
	// Steps holds per-step data, index for index, when any step needs it.
	Steps []stepData `json:"steps,omitempty"`
	// TrafficRoutingAnnotationOnly is the trafficrouting annotation of a Rollout whose
	// trafficRoutingRef was empty.
	TrafficRoutingAnnotationOnly *string `json:"trafficRoutingAnnotationOnly,omitempty"`
	// BlueGreenStatus of a canary Rollout (left over from an earlier blue-green release).
	BlueGreenStatus *rolloutsv1beta1.BlueGreenStatus `json:"blueGreenStatus,omitempty"`
	// StepMirror holds top-level currentStepIndex/currentStepState that differ from the canary status.
	StepMirror *stepMirror `json:"stepMirror,omitempty"`
	// Annotations the conversion overwrote.
	Annotations []annotationChange `json:"annotations,omitempty"`
}

// stepData is the v1beta1-only data of one step.
// +kubebuilder:object:generate=false
type stepData struct {
	// Traffic is the v1beta1 traffic when weight cannot reproduce it ("05%", "abc").
	Traffic *string `json:"traffic,omitempty"`
	// ReplicasUnset: v1beta1 had no replicas, which v1alpha1 would derive from the weight.
	ReplicasUnset bool `json:"replicasUnset,omitempty"`
	// Weight is the weight v1alpha1 showed; Traffic and ReplicasUnset apply only while it is unchanged.
	Weight *int32 `json:"weight,omitempty"`
	// Matches holds path and query-parameter matches, index for index.
	Matches []matchData `json:"matches,omitempty"`
}

// matchData is the v1beta1-only part of one match.
// +kubebuilder:object:generate=false
type matchData struct {
	Path        *gatewayv1.HTTPPathMatch        `json:"path,omitempty"`
	QueryParams []gatewayv1.HTTPQueryParamMatch `json:"queryParams,omitempty"`
}

// stepMirror holds v1beta1's top-level step fields and the canary status values v1alpha1 showed.
// +kubebuilder:object:generate=false
type stepMirror struct {
	Index     int32                           `json:"index"`
	State     rolloutsv1beta1.CanaryStepState `json:"state"`
	SeenIndex int32                           `json:"seenIndex"`
	SeenState rolloutsv1beta1.CanaryStepState `json:"seenState"`
}

// rolloutSpokeData is what a v1alpha1 Rollout holds and v1beta1 cannot express. It travels in
// ConversionDataAnnotation on v1beta1 objects.
// +kubebuilder:object:generate=false
type rolloutSpokeData struct {
	RolloutID string `json:"rolloutID,omitempty"`
}

func (d *rolloutHubData) empty() bool {
	return d.Spec == nil && d.Status == nil && d.Steps == nil && d.TrafficRoutingAnnotationOnly == nil &&
		d.BlueGreenStatus == nil && d.StepMirror == nil && len(d.Annotations) == 0
}

// saveWhole saves the spec and status of a Rollout that has no v1alpha1 form.
func (d *rolloutHubData) saveWhole(src *rolloutsv1beta1.Rollout) {
	d.Spec = src.Spec.DeepCopy()
	if !apiequality.Semantic.DeepEqual(src.Status, rolloutsv1beta1.RolloutStatus{}) {
		d.Status = src.Status.DeepCopy()
	}
}

// restore applies the saved data to dst, the conversion of src.
func (d *rolloutHubData) restore(src *Rollout, dst *rolloutsv1beta1.Rollout) {
	if d.Spec != nil && untouchedSpec(src.Spec) {
		dst.Spec = *d.Spec
	}
	if d.Status != nil && apiequality.Semantic.DeepEqual(src.Status, RolloutStatus{}) {
		dst.Status = *d.Status
	}
	restoreSteps(src.Spec.Strategy.Canary, dst.Spec.Strategy.Canary, d.Steps)
	d.restoreTrafficRoutingRef(src, dst)
	if d.BlueGreenStatus != nil {
		dst.Status.BlueGreenStatus = d.BlueGreenStatus
	}
	d.StepMirror.restore(&src.Status, &dst.Status)
	restoreTracked(src.Annotations, &dst.ObjectMeta, d.Annotations)
}

// untouchedSpec tells whether a v1alpha1 spec is still the empty one written for a blue-green Rollout.
func untouchedSpec(spec RolloutSpec) bool {
	spec.DeprecatedRolloutID = ""
	return apiequality.Semantic.DeepEqual(spec, RolloutSpec{})
}

func (d *rolloutHubData) restoreTrafficRoutingRef(src *Rollout, dst *rolloutsv1beta1.Rollout) {
	canary := dst.Spec.Strategy.Canary
	if d.TrafficRoutingAnnotationOnly == nil || canary == nil {
		return
	}
	if src.Annotations[TrafficRoutingAnnotation] == *d.TrafficRoutingAnnotationOnly {
		canary.TrafficRoutingRef = ""
	}
}

func restoreSteps(src *CanaryStrategy, dst *rolloutsv1beta1.CanaryStrategy, saved []stepData) {
	if src == nil || dst == nil || saved == nil || len(saved) != len(src.Steps) {
		return
	}
	for i := range saved {
		saved[i].restore(&src.Steps[i], &dst.Steps[i])
	}
}

func (d *stepData) empty() bool {
	return d.Traffic == nil && !d.ReplicasUnset && d.Matches == nil
}

func (d *stepData) restore(src *CanaryStep, dst *rolloutsv1beta1.CanaryStep) {
	if equalInt32(src.Weight, d.Weight) {
		if d.Traffic != nil {
			dst.Traffic = copyString(d.Traffic)
		}
		if d.ReplicasUnset && src.Replicas == nil {
			dst.Replicas = nil
		}
	}
	if d.Matches == nil || len(d.Matches) != len(src.Matches) {
		return
	}
	for i := range d.Matches {
		dst.Matches[i].Path = d.Matches[i].Path
		dst.Matches[i].QueryParams = d.Matches[i].QueryParams
	}
}

// pathAndQueryMatches saves the parts of matches v1alpha1 cannot express; nil when there are none.
func pathAndQueryMatches(src []rolloutsv1beta1.HttpRouteMatch) []matchData {
	saved := make([]matchData, len(src))
	found := false
	for i := range src {
		saved[i] = matchData{Path: src[i].Path.DeepCopy(), QueryParams: copySlice(src[i].QueryParams)}
		found = found || saved[i].Path != nil || saved[i].QueryParams != nil
	}
	if !found {
		return nil
	}
	return saved
}

func (m *stepMirror) restore(src *RolloutStatus, dst *rolloutsv1beta1.RolloutStatus) {
	if m == nil {
		return
	}
	if index, state := stepMirrorOf(src.CanaryStatus); index == m.SeenIndex && state == m.SeenState {
		dst.CurrentStepIndex, dst.CurrentStepState = m.Index, m.State
	}
}
