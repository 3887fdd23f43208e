package admission

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
)

// IsStatefulSetLike reports whether obj is released like a StatefulSet: a native or Advanced StatefulSet,
// or any kind labelled rollouts.kruise.io/workload-type=statefulset.
func IsStatefulSetLike(obj *unstructured.Unstructured) bool {
	if obj == nil {
		return false
	}
	if obj.GetLabels()[rolloutsv1beta1.WorkloadTypeLabel] == rolloutsv1beta1.WorkloadTypeStatefulSet {
		return true
	}
	gk := obj.GroupVersionKind().GroupKind()
	return gk == statefulSetKind || gk == advancedStatefulKind
}

// FreezeStatefulSetLike decides what the unified webhook does with an update of a StatefulSet-like object:
// when it uses RollingUpdate, has replicas and its revision effectively changes, it gets
// spec.updateStrategy.rollingUpdate.partition FrozenPartition and the in-progressing annotation. nil means
// no change; an error means the object's update strategy cannot hold a partition.
func FreezeStatefulSetLike(old, cur *unstructured.Unstructured, rollout *rolloutsv1beta1.Rollout) (*unstructured.Unstructured, error) {
	if old == nil || cur == nil || rollout == nil || !IsStatefulSetLike(cur) {
		return nil, nil
	}
	if unstructuredReplicas(cur) == 0 || !rollingUpdate(cur) {
		return nil, nil
	}
	oldTemplate, okOld := nestedMap(old.Object, "spec", "template")
	curTemplate, okCur := nestedMap(cur.Object, "spec", "template")
	if !okOld || !okCur {
		return nil, nil
	}
	if !EffectiveRevisionChange(old.GetAnnotations(), cur.GetAnnotations(), unstructuredTemplateChanged(oldTemplate, curTemplate)) {
		return nil, nil
	}
	out := cur.DeepCopy()
	backfillUID(out, old)
	if err := setNested(out.Object, int64(FrozenPartition), "spec", "updateStrategy", "rollingUpdate", "partition"); err != nil {
		return nil, err
	}
	markInProgressing(out, rollout)
	return changed(cur, out), nil
}

// unstructuredReplicas is spec.replicas, 1 when absent (the API default) and 0 when not a number.
func unstructuredReplicas(obj *unstructured.Unstructured) int64 {
	spec, _ := nestedMap(obj.Object, "spec")
	v, found := spec["replicas"]
	if !found || v == nil {
		return 1
	}
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	default:
		return 0
	}
}

// rollingUpdate reports whether spec.updateStrategy.type is RollingUpdate or unset.
func rollingUpdate(obj *unstructured.Unstructured) bool {
	strategy, ok := nestedMap(obj.Object, "spec", "updateStrategy")
	if !ok {
		return true
	}
	t, _ := strategy["type"].(string)
	return t == "" || t == "RollingUpdate"
}

func nestedMap(obj map[string]any, fields ...string) (map[string]any, bool) {
	cur := obj
	for _, f := range fields {
		next, ok := cur[f].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// setNested sets a value, creating missing or null maps on the way; any other value in the way is an error.
func setNested(obj map[string]any, value any, fields ...string) error {
	cur := obj
	for i, f := range fields[:len(fields)-1] {
		switch next := cur[f].(type) {
		case map[string]any:
			cur = next
		case nil:
			m := map[string]any{}
			cur[f] = m
			cur = m
		default:
			return fmt.Errorf("%s is a %T, not an object", strings.Join(fields[:i+1], "."), next)
		}
	}
	cur[fields[len(fields)-1]] = value
	return nil
}
