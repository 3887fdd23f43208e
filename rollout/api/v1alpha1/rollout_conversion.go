package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// Values of RolloutStyleAnnotation written by conversion.
var (
	canaryStyleValue    = strings.ToLower(string(CanaryRollingStyle))
	partitionStyleValue = strings.ToLower(string(PartitionRollingStyle))
)

// ConvertRolloutToV1beta1 converts a v1alpha1 Rollout to the v1beta1 hub.
//
//   - spec.objectRef.workloadRef becomes spec.workloadRef.
//   - A step's weight N becomes traffic "N%"; a step without replicas gets replicas "N%".
//   - The annotation rollouts.kruise.io/rolling-style sets enableExtraWorkloadForCanary: false for
//     "partition" (any case), true otherwise, so a Deployment defaults to canary style. The annotation is
//     kept on the hub in lower case ("canary" or "partition").
//   - The annotation rollouts.kruise.io/trafficrouting, when not empty, sets trafficRoutingRef; it is kept.
//   - The flat canaryStatus becomes canaryStatus (common and canary fields) and the top-level
//     currentStepIndex and currentStepState mirror it.
//
// Data saved in ConversionDataAnnotation by ConvertRolloutFromV1beta1 is restored; the deprecated
// spec.rolloutID, which v1beta1 lacks, is saved there in turn.
func ConvertRolloutToV1beta1(src *Rollout, dst *rolloutsv1beta1.Rollout) error {
	if src == nil || dst == nil {
		return errNilObject
	}
	saved := loadConversionData[rolloutHubData](src.Annotations)
	*dst = rolloutsv1beta1.Rollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: rolloutsv1beta1.GroupVersion.String(), Kind: "Rollout"},
		ObjectMeta: *src.ObjectMeta.DeepCopy(),
		Spec:       rolloutSpecToV1beta1(&src.Spec, src.Annotations),
		Status:     rolloutStatusToV1beta1(&src.Status),
	}
	if canary := dst.Spec.Strategy.Canary; canary != nil {
		setAnnotation(&dst.ObjectMeta, RolloutStyleAnnotation, present(rolloutStyleValue(canary.EnableExtraWorkloadForCanary)))
	}
	saved.restore(src, dst)
	spokeOnly := rolloutSpokeData{RolloutID: src.Spec.DeprecatedRolloutID}
	return storeConversionData(&dst.ObjectMeta, spokeOnly, spokeOnly == rolloutSpokeData{})
}

// ConvertRolloutFromV1beta1 converts a v1beta1 Rollout to v1alpha1, the reverse of
// ConvertRolloutToV1beta1: traffic "N%" becomes weight N, enableExtraWorkloadForCanary becomes the
// rolling-style annotation ("canary" or "partition") and a non-empty trafficRoutingRef becomes the
// trafficrouting annotation. Traffic that is not an integer percentage gives no weight.
//
// A blue-green Rollout has no v1alpha1 form: the result carries only the object metadata. Everything
// v1alpha1 cannot express (blue-green spec and status, traffic spelling, path and query-parameter
// matches, annotations the conversion overwrote, ...) is saved in ConversionDataAnnotation, so that
// converting the result back gives the original object.
func ConvertRolloutFromV1beta1(src *rolloutsv1beta1.Rollout, dst *Rollout) error {
	if src == nil || dst == nil {
		return errNilObject
	}
	spokeOnly := loadConversionData[rolloutSpokeData](src.Annotations)
	*dst = Rollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "Rollout"},
		ObjectMeta: *src.ObjectMeta.DeepCopy(),
	}
	var saved rolloutHubData
	if src.Spec.Strategy.BlueGreen != nil {
		saved.saveWhole(src)
	} else {
		dst.Spec = rolloutSpecFromV1beta1(&src.Spec, &saved)
		dst.Status = rolloutStatusFromV1beta1(&src.Status, &saved)
		writeRolloutAnnotations(src.Spec.Strategy.Canary, dst, &saved)
	}
	dst.Spec.DeprecatedRolloutID = spokeOnly.RolloutID
	return storeConversionData(&dst.ObjectMeta, saved, saved.empty())
}

func rolloutStyleValue(extraWorkload bool) string {
	if extraWorkload {
		return canaryStyleValue
	}
	return partitionStyleValue
}

func rolloutSpecToV1beta1(src *RolloutSpec, annotations map[string]string) rolloutsv1beta1.RolloutSpec {
	dst := rolloutsv1beta1.RolloutSpec{
		Strategy: rolloutsv1beta1.RolloutStrategy{
			Paused: src.Strategy.Paused,
			Canary: canaryToV1beta1(src.Strategy.Canary, annotations),
		},
		Disabled: src.Disabled,
	}
	if ref := src.ObjectRef.WorkloadRef; ref != nil {
		dst.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}
	}
	return dst
}

func rolloutSpecFromV1beta1(src *rolloutsv1beta1.RolloutSpec, saved *rolloutHubData) RolloutSpec {
	ref := src.WorkloadRef
	return RolloutSpec{
		ObjectRef: ObjectRef{WorkloadRef: &WorkloadRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}},
		Strategy: RolloutStrategy{
			Paused: src.Strategy.Paused,
			Canary: canaryFromV1beta1(src.Strategy.Canary, saved),
		},
		Disabled: src.Disabled,
	}
}

func canaryToV1beta1(src *CanaryStrategy, annotations map[string]string) *rolloutsv1beta1.CanaryStrategy {
	if src == nil {
		return nil
	}
	return &rolloutsv1beta1.CanaryStrategy{
		Steps:                        convertSlice(src.Steps, stepToV1beta1),
		TrafficRoutings:              convertSlice(src.TrafficRoutings, TrafficRoutingRefToV1beta1),
		FailureThreshold:             copyIntOrString(src.FailureThreshold),
		PatchPodTemplateMetadata:     patchMetadataToV1beta1(src.PatchPodTemplateMetadata),
		EnableExtraWorkloadForCanary: !strings.EqualFold(annotations[RolloutStyleAnnotation], string(PartitionRollingStyle)),
		TrafficRoutingRef:            annotations[TrafficRoutingAnnotation],
		DisableGenerateCanaryService: src.DisableGenerateCanaryService,
	}
}

func canaryFromV1beta1(src *rolloutsv1beta1.CanaryStrategy, saved *rolloutHubData) *CanaryStrategy {
	if src == nil {
		return nil
	}
	return &CanaryStrategy{
		Steps:                        stepsFromV1beta1(src.Steps, saved),
		TrafficRoutings:              convertSlice(src.TrafficRoutings, trafficRoutingFromV1beta1),
		FailureThreshold:             copyIntOrString(src.FailureThreshold),
		PatchPodTemplateMetadata:     patchMetadataFromV1beta1(src.PatchPodTemplateMetadata),
		DisableGenerateCanaryService: src.DisableGenerateCanaryService,
	}
}

// writeRolloutAnnotations expresses enableExtraWorkloadForCanary and trafficRoutingRef as annotations.
func writeRolloutAnnotations(canary *rolloutsv1beta1.CanaryStrategy, dst *Rollout, saved *rolloutHubData) {
	if canary == nil {
		return
	}
	style := present(rolloutStyleValue(canary.EnableExtraWorkloadForCanary))
	writeTracked(&dst.ObjectMeta, RolloutStyleAnnotation, style, &saved.Annotations)
	if canary.TrafficRoutingRef != "" {
		writeTracked(&dst.ObjectMeta, TrafficRoutingAnnotation, present(canary.TrafficRoutingRef), &saved.Annotations)
		return
	}
	if name := dst.Annotations[TrafficRoutingAnnotation]; name != "" {
		// The way back would copy the annotation into the empty trafficRoutingRef.
		saved.TrafficRoutingAnnotationOnly = &name
	}
}

func stepToV1beta1(src *CanaryStep) rolloutsv1beta1.CanaryStep {
	dst := rolloutsv1beta1.CanaryStep{
		TrafficRoutingStrategy: rolloutsv1beta1.TrafficRoutingStrategy{
			Traffic:               trafficFromWeight(src.Weight),
			RequestHeaderModifier: src.RequestHeaderModifier.DeepCopy(),
			Matches:               convertSlice(src.Matches, matchToV1beta1),
		},
		Replicas: copyIntOrString(src.Replicas),
		Pause:    rolloutsv1beta1.RolloutPause{Duration: copyInt32(src.Pause.Duration)},
	}
	if dst.Replicas == nil && src.Weight != nil {
		// v1alpha1 releases as many replicas as it routes traffic when replicas are not given.
		replicas := intstr.FromString(*dst.Traffic)
		dst.Replicas = &replicas
	}
	return dst
}

func stepsFromV1beta1(src []rolloutsv1beta1.CanaryStep, saved *rolloutHubData) []CanaryStep {
	if src == nil {
		return nil
	}
	dst := make([]CanaryStep, len(src))
	steps := make([]stepData, len(src))
	keep := false
	for i := range src {
		dst[i], steps[i] = stepFromV1beta1(&src[i])
		keep = keep || !steps[i].empty()
	}
	if keep {
		saved.Steps = steps
	}
	return dst
}

func stepFromV1beta1(src *rolloutsv1beta1.CanaryStep) (CanaryStep, stepData) {
	weight, exact := weightFromTraffic(src.Traffic)
	dst := CanaryStep{
		TrafficRoutingStrategy: TrafficRoutingStrategy{
			Weight:                weight,
			RequestHeaderModifier: src.RequestHeaderModifier.DeepCopy(),
			Matches:               convertSlice(src.Matches, matchFromV1beta1),
		},
		Replicas: copyIntOrString(src.Replicas),
		Pause:    RolloutPause{Duration: copyInt32(src.Pause.Duration)},
	}
	saved := stepData{ReplicasUnset: src.Replicas == nil && weight != nil, Matches: pathAndQueryMatches(src.Matches)}
	if !exact {
		saved.Traffic = copyString(src.Traffic)
	}
	if !saved.empty() {
		saved.Weight = copyInt32(weight)
	}
	return dst, saved
}

// weightFromTraffic parses traffic "N%" (N a 32-bit integer) into weight N. exact tells whether
// trafficFromWeight gives the same text back; nil traffic is exact, unparsable traffic gives no weight.
func weightFromTraffic(traffic *string) (weight *int32, exact bool) {
	if traffic == nil {
		return nil, true
	}
	number, isPercent := strings.CutSuffix(*traffic, "%")
	n, err := strconv.ParseInt(number, 10, 32)
	if !isPercent || err != nil {
		return nil, false
	}
	w := int32(n)
	return &w, *trafficFromWeight(&w) == *traffic
}

func trafficFromWeight(weight *int32) *string {
	if weight == nil {
		return nil
	}
	traffic := fmt.Sprintf("%d%%", *weight)
	return &traffic
}

func matchToV1beta1(src *HttpRouteMatch) rolloutsv1beta1.HttpRouteMatch {
	return rolloutsv1beta1.HttpRouteMatch{Headers: copySlice(src.Headers)}
}

func matchFromV1beta1(src *rolloutsv1beta1.HttpRouteMatch) HttpRouteMatch {
	return HttpRouteMatch{Headers: copySlice(src.Headers)}
}

// TrafficRoutingRefToV1beta1 is the v1beta1 form of a traffic routing reference, the one the engine's traffic
// providers read; a TrafficRouting's objectRef is converted with it too.
func TrafficRoutingRefToV1beta1(src *TrafficRoutingRef) rolloutsv1beta1.TrafficRoutingRef {
	dst := rolloutsv1beta1.TrafficRoutingRef{
		Service:            src.Service,
		GracePeriodSeconds: src.GracePeriodSeconds,
		CustomNetworkRefs: convertSlice(src.CustomNetworkRefs, func(ref *CustomNetworkRef) rolloutsv1beta1.ObjectRef {
			return rolloutsv1beta1.ObjectRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}
		}),
	}
	if src.Ingress != nil {
		dst.Ingress = &rolloutsv1beta1.IngressTrafficRouting{ClassType: src.Ingress.ClassType, Name: src.Ingress.Name}
	}
	if src.Gateway != nil {
		dst.Gateway = &rolloutsv1beta1.GatewayTrafficRouting{HTTPRouteName: copyString(src.Gateway.HTTPRouteName)}
	}
	return dst
}

func trafficRoutingFromV1beta1(src *rolloutsv1beta1.TrafficRoutingRef) TrafficRoutingRef {
	dst := TrafficRoutingRef{
		Service:            src.Service,
		GracePeriodSeconds: src.GracePeriodSeconds,
		CustomNetworkRefs: convertSlice(src.CustomNetworkRefs, func(ref *rolloutsv1beta1.ObjectRef) CustomNetworkRef {
			return CustomNetworkRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}
		}),
	}
	if src.Ingress != nil {
		dst.Ingress = &IngressTrafficRouting{ClassType: src.Ingress.ClassType, Name: src.Ingress.Name}
	}
	if src.Gateway != nil {
		dst.Gateway = &GatewayTrafficRouting{HTTPRouteName: copyString(src.Gateway.HTTPRouteName)}
	}
	return dst
}

func patchMetadataToV1beta1(src *PatchPodTemplateMetadata) *rolloutsv1beta1.PatchPodTemplateMetadata {
	if src == nil {
		return nil
	}
	return &rolloutsv1beta1.PatchPodTemplateMetadata{
		Annotations: copyStringMap(src.Annotations),
		Labels:      copyStringMap(src.Labels),
	}
}

func patchMetadataFromV1beta1(src *rolloutsv1beta1.PatchPodTemplateMetadata) *PatchPodTemplateMetadata {
	if src == nil {
		return nil
	}
	return &PatchPodTemplateMetadata{
		Annotations: copyStringMap(src.Annotations),
		Labels:      copyStringMap(src.Labels),
	}
}
