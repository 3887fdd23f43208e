package admission

import (
	"math"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// FrozenPartition is the partition that keeps every pod of a StatefulSet-like workload or an Advanced
// DaemonSet at the old revision; the BatchRelease lowers it batch by batch.
const FrozenPartition = math.MaxInt16

// FrozenCloneSetPartition keeps every pod of a CloneSet at the old revision.
const FrozenCloneSetPartition = "100%"

// FreezeCloneSet decides what the CloneSet webhook does with an update from old to cur; nil means no
// change. A release starts on an effective revision change of a CloneSet with replicas; when the Rollout
// routes traffic all pods must be on one revision first. The CloneSet gets partition "100%" and the
// in-progressing annotation.
func FreezeCloneSet(old, cur *kruiseappsv1alpha1.CloneSet, rollout *rolloutsv1beta1.Rollout) *kruiseappsv1alpha1.CloneSet {
	if old == nil || cur == nil || rollout == nil {
		return nil
	}
	if cur.Spec.Replicas != nil && *cur.Spec.Replicas == 0 {
		return nil
	}
	if !EffectiveRevisionChange(old.Annotations, cur.Annotations, TemplateChanged(&old.Spec.Template, &cur.Spec.Template)) {
		return nil
	}
	if hasTrafficRoutings(rollout) && cur.Status.Replicas != cur.Status.UpdatedReplicas {
		return nil
	}
	out := cur.DeepCopy()
	backfillUID(out, old)
	partition := intstr.FromString(FrozenCloneSetPartition)
	out.Spec.UpdateStrategy.Partition = &partition
	markInProgressing(out, rollout)
	return changed(cur, out)
}

// FreezeAdvancedDaemonSet decides what the Advanced DaemonSet webhook does: on an effective revision
// change, rollingUpdate.partition FrozenPartition and the in-progressing annotation; nil means no change.
func FreezeAdvancedDaemonSet(old, cur *kruiseappsv1alpha1.DaemonSet, rollout *rolloutsv1beta1.Rollout) *kruiseappsv1alpha1.DaemonSet {
	if old == nil || cur == nil || rollout == nil {
		return nil
	}
	if !EffectiveRevisionChange(old.Annotations, cur.Annotations, TemplateChanged(&old.Spec.Template, &cur.Spec.Template)) {
		return nil
	}
	out := cur.DeepCopy()
	backfillUID(out, old)
	if out.Spec.UpdateStrategy.RollingUpdate == nil {
		out.Spec.UpdateStrategy.RollingUpdate = &kruiseappsv1alpha1.RollingUpdateDaemonSet{}
	}
	partition := intstr.FromInt32(FrozenPartition)
	out.Spec.UpdateStrategy.RollingUpdate.Partition = &partition
	markInProgressing(out, rollout)
	return changed(cur, out)
}

// FreezeNativeDaemonSet decides what the native DaemonSet webhook does: on an effective revision change the
// update strategy type is saved in the daemonset-original-update-strategy annotation (unless a release
// already saved it) and switched to OnDelete, and the in-progressing annotation is set; nil means no change.
func FreezeNativeDaemonSet(old, cur *appsv1.DaemonSet, rollout *rolloutsv1beta1.Rollout) *appsv1.DaemonSet {
	if old == nil || cur == nil || rollout == nil {
		return nil
	}
	if !EffectiveRevisionChange(old.Annotations, cur.Annotations, TemplateChanged(&old.Spec.Template, &cur.Spec.Template)) {
		return nil
	}
	out := cur.DeepCopy()
	backfillUID(out, old)
	if out.Annotations[rolloutsv1beta1.DaemonSetOriginalUpdateStrategyAnnotation] == "" {
		original := out.Spec.UpdateStrategy.Type
		if original == "" {
			original = appsv1.RollingUpdateDaemonSetStrategyType
		}
		setAnnotation(out, rolloutsv1beta1.DaemonSetOriginalUpdateStrategyAnnotation, string(original))
	}
	// OnDelete: pods are replaced only when the engine deletes them, batch by batch.
	out.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
	markInProgressing(out, rollout)
	return changed(cur, out)
}

// changed returns out, or nil when it equals cur.
func changed[T any](cur, out *T) *T {
	if equality.Semantic.DeepEqual(cur, out) {
		return nil
	}
	return out
}

// backfillUID copies the UID of the stored object when the update carries none, as multi-cluster tools
// (Karmada, OCM) send.
func backfillUID(cur, old metav1.Object) {
	if cur.GetUID() == "" {
		cur.SetUID(old.GetUID())
	}
}

func markInProgressing(obj metav1.Object, rollout *rolloutsv1beta1.Rollout) {
	setAnnotation(obj, rolloutsv1beta1.InProgressingAnnotation, InProgressingValue(rollout.Name))
}

func setAnnotation(obj metav1.Object, key, value string) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	obj.SetAnnotations(a)
}

func setLabel(obj metav1.Object, key, value string) {
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[key] = value
	obj.SetLabels(l)
}
