package main

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// parsePodNames reads --pods: names separated by commas, spaces around them ignored.
func parsePodNames(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("must specify one pod name")
	}
	return out, nil
}

// planScaleDown deletes chosen pods of a CloneSet as upstream does: they join
// spec.scaleStrategy.podsToDelete and spec.replicas drops by their number. Pods already listed were
// counted when they were added, so they change nothing again.
func planScaleDown(obj *unstructured.Unstructured, pods []string) (edit, error) {
	var cs kruiseappsv1alpha1.CloneSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &cs); err != nil {
		return edit{}, fmt.Errorf("decoding the CloneSet: %w", err)
	}
	listed := cs.Spec.ScaleStrategy.PodsToDelete
	var added []string
	for _, p := range pods {
		if !slices.Contains(listed, p) {
			added = append(added, p)
		}
	}
	if len(added) == 0 {
		return edit{}, fmt.Errorf("already deletes pods %v (spec.scaleStrategy.podsToDelete)", pods)
	}
	replicas := int64(1)
	if cs.Spec.Replicas != nil {
		replicas = int64(*cs.Spec.Replicas)
	}
	if int64(len(added)) > replicas {
		return edit{}, fmt.Errorf("cannot delete %d pods: spec.replicas is %d", len(added), replicas)
	}
	return scaleDownEdit(obj, replicas-int64(len(added)), append(slices.Clone(listed), added...))
}

func scaleDownEdit(obj *unstructured.Unstructured, replicas int64, podsToDelete []string) (edit, error) {
	list := make([]any, len(podsToDelete))
	for i, p := range podsToDelete {
		list[i] = p
	}
	preview := obj.DeepCopy()
	if err := unstructured.SetNestedField(preview.Object, replicas, "spec", "replicas"); err != nil {
		return edit{}, fmt.Errorf("setting spec.replicas: %w", err)
	}
	if err := unstructured.SetNestedSlice(preview.Object, list, "spec", "scaleStrategy", "podsToDelete"); err != nil {
		return edit{}, fmt.Errorf("setting spec.scaleStrategy.podsToDelete: %w", err)
	}
	patch := withResourceVersion(map[string]any{"spec": map[string]any{
		"replicas":      replicas,
		"scaleStrategy": map[string]any{"podsToDelete": list},
	}}, obj)
	return mergeEdit(patch, preview)
}

// scalePatch is the merge patch of the scale subresource that `scale` sends; resourceVersion, when set,
// makes it fail if the workload changed since (--resource-version, or the read --current-replicas checked).
func scalePatch(replicas int32, resourceVersion string) (edit, error) {
	patch := map[string]any{"spec": map[string]any{"replicas": replicas}}
	if resourceVersion != "" {
		patch["metadata"] = map[string]any{"resourceVersion": resourceVersion}
	}
	return mergeEdit(patch, nil)
}

// checkScale tests --current-replicas against the replicas the scale subresource reports (-1: no check).
func checkScale(scale *unstructured.Unstructured, current int32) error {
	if current < 0 {
		return nil
	}
	replicas, _, err := unstructured.NestedInt64(scale.Object, "spec", "replicas")
	if err != nil {
		return fmt.Errorf("reading the scale: %w", err)
	}
	if replicas != int64(current) {
		return fmt.Errorf("expected replicas to be %d, was %d", current, replicas)
	}
	return nil
}
