package v1alpha1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// batchReleaseHubData is what a v1beta1 BatchRelease holds and its v1alpha1 form cannot express; it
// travels in ConversionDataAnnotation on v1alpha1 objects.
// +kubebuilder:object:generate=false
type batchReleaseHubData struct {
	// Message is status.message, absent from v1alpha1.
	Message string `json:"message,omitempty"`
	// Annotations the conversion overwrote.
	Annotations []annotationChange `json:"annotations,omitempty"`
}

func (d *batchReleaseHubData) empty() bool { return d.Message == "" && len(d.Annotations) == 0 }

// ConvertBatchReleaseToV1beta1 converts a v1alpha1 BatchRelease to the v1beta1 hub.
// spec.targetReference.workloadRef becomes spec.workloadRef. The rolling style comes from the annotation
// rollouts.kruise.io/rolling-style when it names one ("canary", "partition", "bluegreen", any case),
// otherwise from spec.releasePlan.rollingStyle; the annotation is kept, in lower case.
// enableExtraWorkloadForCanary is copied. Data saved by ConvertBatchReleaseFromV1beta1 is restored.
func ConvertBatchReleaseToV1beta1(src *BatchRelease, dst *rolloutsv1beta1.BatchRelease) error {
	if src == nil || dst == nil {
		return errNilObject
	}
	saved := loadConversionData[batchReleaseHubData](src.Annotations)
	*dst = rolloutsv1beta1.BatchRelease{
		TypeMeta:   metav1.TypeMeta{APIVersion: rolloutsv1beta1.GroupVersion.String(), Kind: "BatchRelease"},
		ObjectMeta: *src.ObjectMeta.DeepCopy(),
		Spec: rolloutsv1beta1.BatchReleaseSpec{
			ReleasePlan: releasePlanToV1beta1(&src.Spec.ReleasePlan, src.Annotations[RolloutStyleAnnotation]),
		},
		Status: batchReleaseStatusToV1beta1(&src.Status),
	}
	if ref := src.Spec.TargetRef.WorkloadRef; ref != nil {
		dst.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}
	}
	if style := dst.Spec.ReleasePlan.RollingStyle; style != "" {
		setAnnotation(&dst.ObjectMeta, RolloutStyleAnnotation, present(strings.ToLower(string(style))))
	}
	restoreTracked(src.Annotations, &dst.ObjectMeta, saved.Annotations)
	dst.Status.Message = saved.Message
	delete(dst.Annotations, ConversionDataAnnotation) // v1alpha1 BatchReleases have no data v1beta1 lacks
	return nil
}

// ConvertBatchReleaseFromV1beta1 converts a v1beta1 BatchRelease to v1alpha1: spec.workloadRef becomes
// spec.targetReference.workloadRef, rollingStyle is also written to the rolling-style annotation in lower
// case (a recognised annotation is removed when rollingStyle is empty), and status.message is saved in
// ConversionDataAnnotation together with any annotation value the conversion replaced.
func ConvertBatchReleaseFromV1beta1(src *rolloutsv1beta1.BatchRelease, dst *BatchRelease) error {
	if src == nil || dst == nil {
		return errNilObject
	}
	ref := src.Spec.WorkloadRef
	*dst = BatchRelease{
		TypeMeta:   metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "BatchRelease"},
		ObjectMeta: *src.ObjectMeta.DeepCopy(),
		Spec: BatchReleaseSpec{
			TargetRef:   ObjectRef{WorkloadRef: &WorkloadRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}},
			ReleasePlan: releasePlanFromV1beta1(&src.Spec.ReleasePlan),
		},
		Status: batchReleaseStatusFromV1beta1(&src.Status),
	}
	saved := batchReleaseHubData{Message: src.Status.Message}
	style := batchStyleAnnotation(src.Spec.ReleasePlan.RollingStyle, annotationOf(dst.Annotations, RolloutStyleAnnotation))
	writeTracked(&dst.ObjectMeta, RolloutStyleAnnotation, style, &saved.Annotations)
	return storeConversionData(&dst.ObjectMeta, saved, saved.empty())
}

// batchStyleAnnotation is the rolling-style annotation a v1alpha1 BatchRelease gets for a v1beta1 style.
func batchStyleAnnotation(style rolloutsv1beta1.RollingStyleType, current annotationValue) annotationValue {
	switch {
	case style != "":
		return present(strings.ToLower(string(style)))
	case knownBatchStyle(current.Value) != "":
		// Kept, the annotation would set a style v1beta1 did not have.
		return annotationValue{}
	default:
		return current
	}
}

// knownBatchStyle returns the style an annotation value names, ignoring case, or "".
func knownBatchStyle(value string) rolloutsv1beta1.RollingStyleType {
	for _, style := range []rolloutsv1beta1.RollingStyleType{
		rolloutsv1beta1.CanaryRollingStyle, rolloutsv1beta1.PartitionRollingStyle, rolloutsv1beta1.BlueGreenRollingStyle,
	} {
		if strings.EqualFold(value, string(style)) {
			return style
		}
	}
	return ""
}

// batchStyleToV1beta1 decides the v1beta1 style: the annotation when it names a style (keeping the
// field's spelling when the field names the same style), else the field.
func batchStyleToV1beta1(field RollingStyleType, annotation string) rolloutsv1beta1.RollingStyleType {
	known := knownBatchStyle(annotation)
	if known == "" || strings.EqualFold(string(field), string(known)) {
		return rolloutsv1beta1.RollingStyleType(field)
	}
	return known
}

func releasePlanToV1beta1(src *ReleasePlan, styleAnnotation string) rolloutsv1beta1.ReleasePlan {
	return rolloutsv1beta1.ReleasePlan{
		Batches: convertSlice(src.Batches, func(b *ReleaseBatch) rolloutsv1beta1.ReleaseBatch {
			return rolloutsv1beta1.ReleaseBatch{CanaryReplicas: b.CanaryReplicas}
		}),
		BatchPartition:               copyInt32(src.BatchPartition),
		RolloutID:                    src.RolloutID,
		FailureThreshold:             copyIntOrString(src.FailureThreshold),
		FinalizingPolicy:             rolloutsv1beta1.FinalizingPolicyType(src.FinalizingPolicy),
		PatchPodTemplateMetadata:     patchMetadataToV1beta1(src.PatchPodTemplateMetadata),
		RollingStyle:                 batchStyleToV1beta1(src.RollingStyle, styleAnnotation),
		EnableExtraWorkloadForCanary: src.EnableExtraWorkloadForCanary,
	}
}

func releasePlanFromV1beta1(src *rolloutsv1beta1.ReleasePlan) ReleasePlan {
	return ReleasePlan{
		Batches: convertSlice(src.Batches, func(b *rolloutsv1beta1.ReleaseBatch) ReleaseBatch {
			return ReleaseBatch{CanaryReplicas: b.CanaryReplicas}
		}),
		BatchPartition:               copyInt32(src.BatchPartition),
		RolloutID:                    src.RolloutID,
		FailureThreshold:             copyIntOrString(src.FailureThreshold),
		FinalizingPolicy:             FinalizingPolicyType(src.FinalizingPolicy),
		PatchPodTemplateMetadata:     patchMetadataFromV1beta1(src.PatchPodTemplateMetadata),
		RollingStyle:                 RollingStyleType(src.RollingStyle),
		EnableExtraWorkloadForCanary: src.EnableExtraWorkloadForCanary,
	}
}

func batchReleaseStatusToV1beta1(src *BatchReleaseStatus) rolloutsv1beta1.BatchReleaseStatus {
	c := &src.CanaryStatus
	return rolloutsv1beta1.BatchReleaseStatus{
		Conditions: convertSlice(src.Conditions, conditionToV1beta1),
		CanaryStatus: rolloutsv1beta1.BatchReleaseCanaryStatus{
			CurrentBatchState:    rolloutsv1beta1.BatchReleaseBatchStateType(c.CurrentBatchState),
			CurrentBatch:         c.CurrentBatch,
			BatchReadyTime:       copyTime(c.BatchReadyTime),
			UpdatedReplicas:      c.UpdatedReplicas,
			UpdatedReadyReplicas: c.UpdatedReadyReplicas,
			NoNeedUpdateReplicas: copyInt32(c.NoNeedUpdateReplicas),
		},
		StableRevision:           src.StableRevision,
		UpdateRevision:           src.UpdateRevision,
		ObservedGeneration:       src.ObservedGeneration,
		ObservedRolloutID:        src.ObservedRolloutID,
		ObservedWorkloadReplicas: src.ObservedWorkloadReplicas,
		CollisionCount:           copyInt32(src.CollisionCount),
		ObservedReleasePlanHash:  src.ObservedReleasePlanHash,
		Phase:                    rolloutsv1beta1.RolloutPhase(src.Phase),
	}
}

func batchReleaseStatusFromV1beta1(src *rolloutsv1beta1.BatchReleaseStatus) BatchReleaseStatus {
	c := &src.CanaryStatus
	return BatchReleaseStatus{
		Conditions: convertSlice(src.Conditions, conditionFromV1beta1),
		CanaryStatus: BatchReleaseCanaryStatus{
			CurrentBatchState:    BatchReleaseBatchStateType(c.CurrentBatchState),
			CurrentBatch:         c.CurrentBatch,
			BatchReadyTime:       copyTime(c.BatchReadyTime),
			UpdatedReplicas:      c.UpdatedReplicas,
			UpdatedReadyReplicas: c.UpdatedReadyReplicas,
			NoNeedUpdateReplicas: copyInt32(c.NoNeedUpdateReplicas),
		},
		StableRevision:           src.StableRevision,
		UpdateRevision:           src.UpdateRevision,
		ObservedGeneration:       src.ObservedGeneration,
		ObservedRolloutID:        src.ObservedRolloutID,
		ObservedWorkloadReplicas: src.ObservedWorkloadReplicas,
		CollisionCount:           copyInt32(src.CollisionCount),
		ObservedReleasePlanHash:  src.ObservedReleasePlanHash,
		Phase:                    RolloutPhase(src.Phase),
	}
}
