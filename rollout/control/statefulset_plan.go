package control

import (
	"errors"
	"math"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// frozenPartition is the partition that keeps every pod of a StatefulSet on its current revision, as upstream
// writes it.
const frozenPartition = math.MaxInt16

var partitionPath = []string{"spec", "updateStrategy", "rollingUpdate", "partition"}

// statefulSetState is what the control reads from a StatefulSet-like object; missing fields read as zero.
type statefulSetState struct {
	replicas           int32
	generation         int64
	observedGeneration int64
	updatedReplicas    int32
	// updatedReadyReplicas is nil when the kind does not report it (native StatefulSet).
	updatedReadyReplicas *int32
	currentRevision      string
	updateRevision       string
	selector             *metav1.LabelSelector
}

func readStatefulSetState(obj *unstructured.Unstructured) (statefulSetState, error) {
	m := obj.Object
	st := statefulSetState{
		replicas:           1,
		generation:         obj.GetGeneration(),
		currentRevision:    nestedString(m, "status", "currentRevision"),
		updateRevision:     nestedString(m, "status", "updateRevision"),
		observedGeneration: int64Field(m, "status", "observedGeneration"),
		updatedReplicas:    toInt32(int64Field(m, "status", "updatedReplicas")),
	}
	if n, ok := nestedInt(m, "spec", "replicas"); ok {
		st.replicas = max(toInt32(n), 0)
	}
	if n, ok := nestedInt(m, "status", "updatedReadyReplicas"); ok {
		v := toInt32(n)
		st.updatedReadyReplicas = &v
	}
	sel, err := unstructuredSelector(m)
	st.selector = sel
	return st, err
}

func int64Field(m map[string]any, path ...string) int64 {
	n, _ := nestedInt(m, path...)
	return n
}

func unstructuredSelector(m map[string]any) (*metav1.LabelSelector, error) {
	raw, ok := nestedField(m, "spec", "selector")
	if !ok || raw == nil {
		return nil, nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, field.Invalid(field.NewPath("spec", "selector"), raw, "not an object")
	}
	sel := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, sel); err != nil {
		return nil, errors.Join(field.Invalid(field.NewPath("spec", "selector"), "", "not a label selector"), err)
	}
	return sel, nil
}

// statefulSetInfo builds the WorkloadInfo; UpdatedReadyReplicas stays 0 when the kind does not report it.
func statefulSetInfo(obj *unstructured.Unstructured, st statefulSetState, t Target) *WorkloadInfo {
	info := &WorkloadInfo{
		Object:           obj,
		Replicas:         st.replicas,
		UpdatedReplicas:  st.updatedReplicas,
		StableRevision:   st.currentRevision,
		UpdateRevision:   st.updateRevision,
		RevisionLabelKey: rolloutsv1beta1.ControllerRevisionHashLabelKey,
		Consistent:       st.observedGeneration >= st.generation,
		Controlled:       ControlledBy(obj.GetAnnotations(), t.Owner),
	}
	if st.updatedReadyReplicas != nil {
		info.UpdatedReadyReplicas = *st.updatedReadyReplicas
	}
	sel, err := workloadSelector(st.selector)
	if err != nil {
		sel = labels.Nothing()
	}
	info.UpdatedPods = revisionSelector(sel, info.RevisionLabelKey, st.updateRevision)
	return info
}

// isAdvancedStatefulSet reports whether obj is a kruise Advanced StatefulSet, which also has
// rollingUpdate.paused.
func isAdvancedStatefulSet(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "apps.kruise.io" && gvk.Kind == "StatefulSet"
}

// statefulSetInitPatch takes control and freezes the rollout. A partition this release already lowered is
// kept, so a repeated Initialize never moves the release backwards.
func statefulSetInitPatch(obj *unstructured.Unstructured, t Target) map[string]any {
	patch := map[string]any{}
	controlled := ControlledBy(obj.GetAnnotations(), t.Owner)
	if !controlled {
		setNested(patch, ControlInfo(t.Owner), "metadata", "annotations", rolloutsv1beta1.BatchReleaseControlAnnotation)
	}
	partition, ok := nestedInt(obj.Object, partitionPath...)
	keep := ok && (partition == frozenPartition || (controlled && partition < frozenPartition))
	if !keep {
		setNested(patch, int64(frozenPartition), partitionPath...)
	}
	if isAdvancedStatefulSet(obj) {
		raw, _ := nestedField(obj.Object, "spec", "updateStrategy", "rollingUpdate", "paused")
		if paused, ok := raw.(bool); !ok || paused {
			setNested(patch, false, "spec", "updateStrategy", "rollingUpdate", "paused")
		}
	}
	return patch
}

// statefulSetBatchPatch lowers the partition to leave the batch's pods updated; it never raises it, but for an
// aborted release, which freezes it again. Ordinals at or above the partition update, so the pods a rollback in
// batches finds already rolled back (the lowest ordinals, which the release being rolled back never reached)
// are not counted from the top.
func statefulSetBatchPatch(obj *unstructured.Unstructured, b Batch) map[string]any {
	replicas := int32(1)
	if n, ok := nestedInt(obj.Object, "spec", "replicas"); ok {
		replicas = max(toInt32(n), 0)
	}
	fromTop := upTo(b.DesiredUpdated, replicas) - upTo(b.Unmoved, replicas)
	target := int64(replicas - max(fromTop, 0))
	if b.Abort {
		target = frozenPartition
	}
	current, ok := nestedInt(obj.Object, partitionPath...)
	if !ok || current == target || (!b.Abort && current < target) {
		return nil
	}
	patch := map[string]any{}
	setNested(patch, target, partitionPath...)
	return patch
}

// statefulSetFinalizePatch releases the workload: control-info goes, and so does the partition unless the
// release is cancelled with the workload kept frozen. A workload another release controls is left alone.
func statefulSetFinalizePatch(obj *unstructured.Unstructured, t Target) map[string]any {
	annotations := obj.GetAnnotations()
	if controlledByOther(annotations, t.Owner) {
		return nil
	}
	patch := map[string]any{}
	if _, ok := annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]; ok {
		setNested(patch, nil, "metadata", "annotations", rolloutsv1beta1.BatchReleaseControlAnnotation)
	}
	if hasPartition(obj) && !keepsFrozen(t) {
		setNested(patch, nil, partitionPath...)
	}
	return patch
}

// hasPartition reports whether a partition holds pods back. The apiserver defaults a removed partition to 0,
// which counts as none, or finalising would patch forever.
func hasPartition(obj *unstructured.Unstructured) bool {
	raw, ok := nestedField(obj.Object, partitionPath...)
	if !ok || raw == nil {
		return false
	}
	n, isInt := nestedInt(obj.Object, partitionPath...)
	return !isInt || n != 0
}

// statefulSetResumed reports whether a released StatefulSet finished rolling out.
func statefulSetResumed(st statefulSetState) bool {
	if st.observedGeneration < st.generation {
		return false
	}
	if st.updatedReplicas == st.replicas && st.updateRevision == st.currentRevision {
		return true
	}
	return st.updatedReadyReplicas != nil && *st.updatedReadyReplicas == st.replicas
}
