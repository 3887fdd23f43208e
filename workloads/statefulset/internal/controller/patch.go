package controller

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/podwrite"
)

// podWriter writes the StatefulSet's pods (workloads/podwrite), telling its expectations.
func (r *Reconciler) podWriter(set *kruiseappsv1beta1.StatefulSet) podwrite.Writer {
	key := client.ObjectKeyFromObject(set)
	return podwrite.Writer{Client: r.Client, APIReader: r.APIReader, Wrote: func(pod, rv string) { r.expectations.Updated(key, pod, rv) }}
}

func (r *Reconciler) patchPod(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, p *corev1.Pod, change func(*corev1.Pod) bool) error {
	return r.podWriter(set).Patch(ctx, p, change)
}

// patchPodStatus applies change to a copy of p and writes what it changed of the labels, annotations and
// conditions in one pods/status write: that endpoint keeps metadata changes (it protects only the spec and
// owner references), and a strategic merge patch merges conditions by type, so the kubelet's own conditions,
// written meanwhile, stay as they are. It needs no lock: the conditions this controller owns carry their
// whole new value. Built by hand, the patch costs little more than its bytes.
func (r *Reconciler) patchPodStatus(ctx context.Context, set *kruiseappsv1beta1.StatefulSet, p *corev1.Pod, change func(*corev1.Pod) bool) error {
	next := p.DeepCopy()
	if !change(next) {
		return nil
	}
	raw, err := json.Marshal(statusPatch(p, next))
	if err != nil {
		return fmt.Errorf("encode the status patch of pod %s: %w", p.Name, err)
	}
	if err := r.Client.Status().Patch(ctx, next, client.RawPatch(types.StrategicMergePatchType, raw)); err != nil {
		return fmt.Errorf("patch status of pod %s: %w", p.Name, err)
	}
	r.expectations.Updated(client.ObjectKeyFromObject(set), next.Name, next.ResourceVersion)
	*p = *next
	return nil
}

// statusPatch is the strategic merge patch from old to next of labels, annotations and conditions.
func statusPatch(old, next *corev1.Pod) map[string]any {
	var conds []corev1.PodCondition
	for _, c := range next.Status.Conditions {
		if o := condition(old, c.Type); o == nil || !equality.Semantic.DeepEqual(*o, c) {
			conds = append(conds, c)
		}
	}
	return map[string]any{
		"metadata": map[string]any{"labels": changedEntries(old.Labels, next.Labels), "annotations": changedEntries(old.Annotations, next.Annotations)},
		"status":   map[string]any{"conditions": conds},
	}
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// changedEntries are next's new or changed entries, and nil for each key next dropped.
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
