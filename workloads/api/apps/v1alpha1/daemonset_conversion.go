package v1alpha1

import (
	"errors"
	"strconv"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// An Advanced DaemonSet is stored as v1alpha1 and served as v1beta1 too. The two forms differ in two places:
// v1alpha1's annotation daemonset.kruise.io/progressive-create-pod is v1beta1's
// spec.scaleStrategy.partitionedScaling, and status.daemonSetHash is status.updateRevision. Each side shows
// only its own form, so the two can never disagree: the annotation is "true" or "false" exactly when the
// scale strategy is set, and a v1beta1 client that clears the field clears what v1alpha1 clients see.
// Every other value converts as it is, the deprecated Surging type included, so a round trip changes nothing.

var errNilObject = errors.New("conversion of a nil object")

// ConvertDaemonSetToV1beta1 converts a stored v1alpha1 DaemonSet into its v1beta1 form.
func ConvertDaemonSetToV1beta1(src *DaemonSet, dst *kruiseappsv1beta1.DaemonSet) error {
	if src == nil || dst == nil {
		return errNilObject
	}
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	dst.Spec = daemonSetSpecToV1beta1(src.Spec.DeepCopy())
	dst.Spec.ScaleStrategy = scaleStrategyFrom(dst.Annotations[ProgressiveCreatePodAnnotation])
	if dst.Spec.ScaleStrategy != nil {
		delete(dst.Annotations, ProgressiveCreatePodAnnotation)
	}
	dst.Status = daemonSetStatusToV1beta1(src.Status.DeepCopy())
	return nil
}

// ConvertDaemonSetFromV1beta1 converts a v1beta1 DaemonSet into the stored v1alpha1 form.
func ConvertDaemonSetFromV1beta1(src *kruiseappsv1beta1.DaemonSet, dst *DaemonSet) error {
	if src == nil || dst == nil {
		return errNilObject
	}
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	dst.Spec = daemonSetSpecFromV1beta1(src.Spec.DeepCopy())
	setProgressiveAnnotation(dst, src.Spec.ScaleStrategy)
	dst.Status = daemonSetStatusFromV1beta1(src.Status.DeepCopy())
	return nil
}

// scaleStrategyFrom is the scale strategy an annotation value stands for: none unless it is a boolean, which
// the annotation then no longer needs to carry.
func scaleStrategyFrom(annotation string) *kruiseappsv1beta1.DaemonSetScaleStrategy {
	if annotation != "true" && annotation != "false" {
		return nil
	}
	return &kruiseappsv1beta1.DaemonSetScaleStrategy{PartitionedScaling: annotation == "true"}
}

// setProgressiveAnnotation writes the scale strategy as the annotation; without one, a boolean annotation
// (which the v1beta1 form would have shown as a scale strategy) is gone, and any other value stays.
func setProgressiveAnnotation(ds *DaemonSet, s *kruiseappsv1beta1.DaemonSetScaleStrategy) {
	if s == nil {
		if scaleStrategyFrom(ds.Annotations[ProgressiveCreatePodAnnotation]) != nil {
			delete(ds.Annotations, ProgressiveCreatePodAnnotation)
		}
		return
	}
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[ProgressiveCreatePodAnnotation] = strconv.FormatBool(s.PartitionedScaling)
}

func daemonSetSpecToV1beta1(s *DaemonSetSpec) kruiseappsv1beta1.DaemonSetSpec {
	return kruiseappsv1beta1.DaemonSetSpec{
		Selector: s.Selector, Template: s.Template, MinReadySeconds: s.MinReadySeconds,
		BurstReplicas: s.BurstReplicas, RevisionHistoryLimit: s.RevisionHistoryLimit, Lifecycle: s.Lifecycle,
		UpdateStrategy: kruiseappsv1beta1.DaemonSetUpdateStrategy{
			Type:          kruiseappsv1beta1.DaemonSetUpdateStrategyType(s.UpdateStrategy.Type),
			RollingUpdate: rollingUpdateToV1beta1(s.UpdateStrategy.RollingUpdate),
		},
	}
}

func daemonSetSpecFromV1beta1(s *kruiseappsv1beta1.DaemonSetSpec) DaemonSetSpec {
	return DaemonSetSpec{
		Selector: s.Selector, Template: s.Template, MinReadySeconds: s.MinReadySeconds,
		BurstReplicas: s.BurstReplicas, RevisionHistoryLimit: s.RevisionHistoryLimit, Lifecycle: s.Lifecycle,
		UpdateStrategy: DaemonSetUpdateStrategy{
			Type:          DaemonSetUpdateStrategyType(s.UpdateStrategy.Type),
			RollingUpdate: rollingUpdateFromV1beta1(s.UpdateStrategy.RollingUpdate),
		},
	}
}

func rollingUpdateToV1beta1(r *RollingUpdateDaemonSet) *kruiseappsv1beta1.RollingUpdateDaemonSet {
	if r == nil {
		return nil
	}
	return &kruiseappsv1beta1.RollingUpdateDaemonSet{Type: kruiseappsv1beta1.RollingUpdateType(r.Type),
		MaxUnavailable: r.MaxUnavailable, MaxSurge: r.MaxSurge, Selector: r.Selector, Partition: r.Partition, Paused: r.Paused}
}

func rollingUpdateFromV1beta1(r *kruiseappsv1beta1.RollingUpdateDaemonSet) *RollingUpdateDaemonSet {
	if r == nil {
		return nil
	}
	return &RollingUpdateDaemonSet{Type: RollingUpdateType(r.Type),
		MaxUnavailable: r.MaxUnavailable, MaxSurge: r.MaxSurge, Selector: r.Selector, Partition: r.Partition, Paused: r.Paused}
}

func daemonSetStatusToV1beta1(s *DaemonSetStatus) kruiseappsv1beta1.DaemonSetStatus {
	return kruiseappsv1beta1.DaemonSetStatus{
		CurrentNumberScheduled: s.CurrentNumberScheduled, NumberMisscheduled: s.NumberMisscheduled,
		DesiredNumberScheduled: s.DesiredNumberScheduled, NumberReady: s.NumberReady,
		ObservedGeneration: s.ObservedGeneration, UpdatedNumberScheduled: s.UpdatedNumberScheduled,
		NumberAvailable: s.NumberAvailable, NumberUnavailable: s.NumberUnavailable,
		CollisionCount: s.CollisionCount, Conditions: s.Conditions, UpdateRevision: s.DaemonSetHash,
	}
}

func daemonSetStatusFromV1beta1(s *kruiseappsv1beta1.DaemonSetStatus) DaemonSetStatus {
	return DaemonSetStatus{
		CurrentNumberScheduled: s.CurrentNumberScheduled, NumberMisscheduled: s.NumberMisscheduled,
		DesiredNumberScheduled: s.DesiredNumberScheduled, NumberReady: s.NumberReady,
		ObservedGeneration: s.ObservedGeneration, UpdatedNumberScheduled: s.UpdatedNumberScheduled,
		NumberAvailable: s.NumberAvailable, NumberUnavailable: s.NumberUnavailable,
		CollisionCount: s.CollisionCount, Conditions: s.Conditions, DaemonSetHash: s.UpdateRevision,
	}
}
