package control

// Helpers shared by the partition and canary controls of this file family: merge patches built as plain maps,
// tolerant reads of unstructured fields, and pod counting.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/podcondition"
)

// applyMergePatch sends patch as a JSON merge patch; an empty patch sends nothing.
func applyMergePatch(ctx context.Context, c client.Client, obj client.Object, patch map[string]any) error {
	if len(patch) == 0 {
		return nil
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding patch: %w", err)
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("patching %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// setNested sets value at path in m, creating the maps on the way; a nil value removes the field in a
// merge patch.
func setNested(m map[string]any, value any, path ...string) {
	for _, key := range path[:len(path)-1] {
		next, ok := m[key].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[key] = next
		}
		m = next
	}
	m[path[len(path)-1]] = value
}

// nestedField returns the value at path, if every step on the way is a map.
func nestedField(m map[string]any, path ...string) (any, bool) {
	var cur any = m
	for _, key := range path {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[key]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// nestedInt reads an integer at path; JSON decoders produce int64 or float64, tests may use int.
func nestedInt(m map[string]any, path ...string) (int64, bool) {
	v, ok := nestedField(m, path...)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int:
		return int64(n), true
	case float64:
		// Saturate: converting an out-of-range float is implementation-defined.
		return int64(max(min(n, math.MaxInt64/2), math.MinInt64/2)), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	default:
		return 0, false
	}
}

// nestedString reads a string at path; anything else reads as "".
func nestedString(m map[string]any, path ...string) string {
	v, _ := nestedField(m, path...)
	s, _ := v.(string)
	return s
}

// upTo limits v to [0, hi].
func upTo(v, hi int32) int32 {
	return max(0, min(v, hi))
}

// toInt32 narrows an API integer, saturating instead of wrapping on nonsense input.
func toInt32(v int64) int32 {
	const maxInt32, minInt32 = 1<<31 - 1, -1 << 31
	return int32(max(minInt32, min(v, maxInt32))) //nolint:gosec // clamped above
}

// keepsFrozen reports whether finalising leaves the workload as the last batch made it: a release cancelled
// while its plan still names a batch (handed over to the next release, or kept under the
// KeepWorkloadPausedOnRolloutDeletion gate).
func keepsFrozen(t Target) bool {
	return t.Plan.BatchPartition != nil
}

// waitsForResume reports whether Finalize must wait for the workload to finish rolling out.
func waitsForResume(t Target) bool {
	return t.Plan.FinalizingPolicy == rolloutsv1beta1.WaitResumeFinalizingPolicyType && !keepsFrozen(t)
}

// controlledByOther reports whether the control-info annotation names another release, whose state a
// finalising release must not touch.
func controlledByOther(annotations map[string]string, owner metav1.OwnerReference) bool {
	raw := annotations[rolloutsv1beta1.BatchReleaseControlAnnotation]
	return raw != "" && !ControlledBy(annotations, owner)
}

// workloadSelector converts a workload's selector; an empty or missing selector selects nothing, never the
// whole namespace.
func workloadSelector(sel *metav1.LabelSelector) (labels.Selector, error) {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return labels.Nothing(), nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("invalid selector: %w", err)
	}
	return s, nil
}

// revisionSelector narrows a workload selector to the pods whose key label is revision.
func revisionSelector(base labels.Selector, key, revision string) labels.Selector {
	if revision == "" {
		return labels.Nothing()
	}
	req, err := labels.NewRequirement(key, selection.Equals, []string{revision})
	if err != nil {
		// A revision that is no valid label value matches no pod.
		return labels.Nothing()
	}
	return base.Add(*req)
}

// listActivePods lists the pods of a namespace that sel matches and that are not being deleted.
func listActivePods(ctx context.Context, c client.Client, ns string, sel labels.Selector) ([]corev1.Pod, error) {
	// labels.Nothing renders as "" and would list the whole namespace.
	if sel.String() == "" {
		return nil, nil
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	active := pods.Items[:0]
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			active = append(active, p)
		}
	}
	return active, nil
}

// controlledByUID reports whether refs name owner as controller.
func controlledByUID(refs []metav1.OwnerReference, owner metav1.Object) bool {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return r.UID == owner.GetUID()
		}
	}
	return false
}

// countReady counts the ready pods.
func countReady(pods []corev1.Pod) int32 {
	var n int32
	for i := range pods {
		if podcondition.IsReady(&pods[i]) {
			n++
		}
	}
	return n
}

// finalizeGone ends finalising when the workload is gone; other errors are returned.
func finalizeGone(err error) (bool, error) {
	if errors.Is(err, ErrWorkloadGone) {
		return true, nil
	}
	return false, err
}

// wrapGet turns NotFound into ErrWorkloadGone, keeping the workload's name in the message.
func wrapGet(err error, kind, ns, name string) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s/%s: %w", kind, ns, name, ErrWorkloadGone)
	}
	return fmt.Errorf("getting %s %s/%s: %w", kind, ns, name, err)
}
