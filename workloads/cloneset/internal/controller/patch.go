package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/jsonpatch"
	"github.com/flotilla-dev/flotilla/workloads/lifecycle"
	"github.com/flotilla-dev/flotilla/workloads/podwrite"
)

// podWriter writes the CloneSet's pods (workloads/podwrite), telling its expectations.
func (r *Reconciler) podWriter(cs *kruiseappsv1alpha1.CloneSet) podwrite.Writer {
	key := client.ObjectKeyFromObject(cs)
	return podwrite.Writer{Client: r.Client, APIReader: r.APIReader, Wrote: func(pod, rv string) { r.expectations.Updated(key, pod, rv) }}
}

func (r *Reconciler) patchPod(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod, change func(*corev1.Pod) bool) error {
	return r.podWriter(cs).Patch(ctx, p, change)
}

func (r *Reconciler) patchPodStatus(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod, change func(*corev1.Pod) bool) error {
	return r.podWriter(cs).PatchStatus(ctx, p, change)
}

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// patchStateTested moves the pod's lifecycle state with a JSON patch that tests the state label instead of
// the pod's resourceVersion. Use it when the move depends on nothing but the current state (no lifecycle
// hooks): the scheduler's and the kubelet's writes in between then cost no conflict and no second round trip.
// A pod without the label falls back to the guarded patch.
func (r *Reconciler) patchStateTested(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod, state kruiseappspub.LifecycleStateType) error {
	now := r.Clock.Now()
	next := p.DeepCopy()
	if !lifecycle.SetState(next, state, now) {
		return nil
	}
	ops := stateOps(p, next)
	if ops == nil {
		return r.patchPod(ctx, cs, p, func(p *corev1.Pod) bool { return lifecycle.SetState(p, state, now) })
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encode the state patch of pod %s: %w", p.Name, err)
	}
	if err := r.Client.Patch(ctx, next, client.RawPatch(types.JSONPatchType, raw)); err != nil {
		return fmt.Errorf("patch the state of pod %s: %w", p.Name, err)
	}
	r.expectations.Updated(client.ObjectKeyFromObject(cs), next.Name, next.ResourceVersion)
	*p = *next
	return nil
}

// stateOps are the operations that turn old's state label and timestamp into next's, guarded by a test of
// old's state; nil when old has no state to test or next removes it.
func stateOps(old, next *corev1.Pod) []jsonPatchOp {
	cur, ok := old.Labels[kruiseappspub.LifecycleStateKey]
	state := next.Labels[kruiseappspub.LifecycleStateKey]
	if !ok || state == "" {
		return nil
	}
	label := "/metadata/labels/" + jsonpatch.Escape(kruiseappspub.LifecycleStateKey)
	stamp := next.Annotations[kruiseappspub.LifecycleTimestampKey]
	ops := []jsonPatchOp{{Op: "test", Path: label, Value: cur}, {Op: "replace", Path: label, Value: state}}
	if old.Annotations == nil {
		return append(ops, jsonPatchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{kruiseappspub.LifecycleTimestampKey: stamp}})
	}
	return append(ops, jsonPatchOp{Op: "add", Path: "/metadata/annotations/" + jsonpatch.Escape(kruiseappspub.LifecycleTimestampKey), Value: stamp})
}

// patchStatusAndState writes a status change and the lifecycle state move in one pods/status write: that
// endpoint keeps label and annotation changes (it protects only the spec and owner references). It serves
// pods without lifecycle hooks, where no operator needs to see the readiness change before the state.
// A pod with conditions gets a JSON patch that tests the state label and the index of every condition it
// replaces; when a test fails (the pod moved on meanwhile), the two writes are made apart, each with its own
// guard. A pod without conditions is one this controller has just created, whose state nobody else moves:
// a strategic merge patch then keeps whatever conditions the scheduler has added meanwhile.
func (r *Reconciler) patchStatusAndState(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod, status func(*corev1.Pod) bool, state kruiseappspub.LifecycleStateType) error {
	next := p.DeepCopy()
	status(next)
	lifecycle.SetState(next, state, r.Clock.Now())
	if len(p.Status.Conditions) == 0 {
		raw, err := json.Marshal(settleMergePatch(p, next))
		if err != nil {
			return fmt.Errorf("encode the settle patch of pod %s: %w", p.Name, err)
		}
		return r.writePodStatus(ctx, cs, p, next, client.RawPatch(types.StrategicMergePatchType, raw))
	}
	labelOps := stateOps(p, next)
	condOps, ok := conditionOps(p, next)
	if labelOps == nil || !ok {
		return r.patchApart(ctx, cs, p, status, state)
	}
	raw, err := json.Marshal(append(labelOps, condOps...))
	if err != nil {
		return fmt.Errorf("encode the settle patch of pod %s: %w", p.Name, err)
	}
	err = r.writePodStatus(ctx, cs, p, next, client.RawPatch(types.JSONPatchType, raw))
	if apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
		return r.patchApart(ctx, cs, p, status, state)
	}
	return err
}

// writePodStatus sends patch to the pod's status and makes p the written pod.
func (r *Reconciler) writePodStatus(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p, next *corev1.Pod, patch client.Patch) error {
	if err := r.Client.Status().Patch(ctx, next, patch); err != nil {
		return fmt.Errorf("patch status and state of pod %s: %w", p.Name, err)
	}
	r.expectations.Updated(client.ObjectKeyFromObject(cs), next.Name, next.ResourceVersion)
	*p = *next
	return nil
}

// patchApart writes the status change, then the state move.
func (r *Reconciler) patchApart(ctx context.Context, cs *kruiseappsv1alpha1.CloneSet, p *corev1.Pod, status func(*corev1.Pod) bool, state kruiseappspub.LifecycleStateType) error {
	if err := r.patchPodStatus(ctx, cs, p, status); err != nil {
		return err
	}
	return r.patchStateTested(ctx, cs, p, state)
}

// conditionOps are the operations that turn old's conditions into next's: a changed condition is replaced
// at its index after a test of the type found there, a new one is appended. ok is false when old has no
// conditions (the list to append to may have appeared meanwhile) or next drops one: these operations
// express neither.
func conditionOps(old, next *corev1.Pod) (ops []jsonPatchOp, ok bool) {
	if len(old.Status.Conditions) == 0 {
		return nil, false
	}
	for _, o := range old.Status.Conditions {
		if !slices.ContainsFunc(next.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == o.Type }) {
			return nil, false
		}
	}
	for _, ch := range changedConditions(old, next) {
		if ch.at < 0 {
			ops = append(ops, jsonPatchOp{Op: "add", Path: "/status/conditions/-", Value: ch.cond})
			continue
		}
		at := "/status/conditions/" + strconv.Itoa(ch.at)
		ops = append(ops, jsonPatchOp{Op: "test", Path: at + "/type", Value: ch.cond.Type}, jsonPatchOp{Op: "replace", Path: at, Value: ch.cond})
	}
	return ops, true
}

// conditionChange is a condition of next that old lacks (at -1) or holds otherwise at index at.
type conditionChange struct {
	at   int
	cond corev1.PodCondition
}

// changedConditions are next's conditions that are new or differ from old's of the same type.
func changedConditions(old, next *corev1.Pod) []conditionChange {
	var out []conditionChange
	for _, c := range next.Status.Conditions {
		i := slices.IndexFunc(old.Status.Conditions, func(o corev1.PodCondition) bool { return o.Type == c.Type })
		if i < 0 || !equality.Semantic.DeepEqual(old.Status.Conditions[i], c) {
			out = append(out, conditionChange{at: i, cond: c})
		}
	}
	return out
}

// settleMergePatch is the strategic merge patch from old to next for what settling changes: labels,
// annotations and conditions (merged by type, so the others stay). Built by hand: computing it from the two
// whole pods was a tenth of the controller's CPU during a large scale-up.
func settleMergePatch(old, next *corev1.Pod) map[string]any {
	var conds []corev1.PodCondition
	for _, ch := range changedConditions(old, next) {
		conds = append(conds, ch.cond)
	}
	return map[string]any{
		"metadata": map[string]any{"labels": changedEntries(old.Labels, next.Labels), "annotations": changedEntries(old.Annotations, next.Annotations)},
		"status":   map[string]any{"conditions": conds},
	}
}

// changedEntries are next's new or changed entries, and nil for each key next dropped (a merge patch
// deletes those).
func changedEntries(old, next map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range next {
		if ov, ok := old[k]; !ok || ov != v {
			out[k] = v
		}
	}
	for k := range old {
		if _, ok := next[k]; !ok {
			out[k] = nil
		}
	}
	return out
}
