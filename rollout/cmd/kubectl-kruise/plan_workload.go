package main

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	// restartedAtAnnotation is the template annotation kubectl sets to restart native workloads.
	restartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"
	// kruiseRestartedAtAnnotation is the template annotation upstream kubectl-kruise sets on kruise kinds.
	kruiseRestartedAtAnnotation = "kubectl.kruise.io/restartedAt"
	// restartedAtEnv is the variable newer upstream plugins set in every container of a kruise workload:
	// an environment change cannot be applied in place, so each pod is recreated.
	restartedAtEnv = "RESTARTED_AT"
)

// planWorkloadPause sets or clears the field that stops a workload's update, refusing a no-op as
// upstream does ("is already paused", "is not paused").
func planWorkloadPause(k *workloadKind, obj *unstructured.Unstructured, paused bool) (edit, error) {
	if k.PausePath == nil {
		if paused {
			return edit{}, fmt.Errorf("pausing is not supported")
		}
		return edit{}, fmt.Errorf("resuming is not supported")
	}
	current, _, err := unstructured.NestedBool(obj.Object, k.PausePath...)
	if err != nil {
		return edit{}, fmt.Errorf("reading %s: %w", strings.Join(k.PausePath, "."), err)
	}
	switch {
	case current && paused:
		return edit{}, fmt.Errorf("is already paused")
	case !current && !paused:
		return edit{}, fmt.Errorf("is not paused")
	}
	preview := obj.DeepCopy()
	if err := unstructured.SetNestedField(preview.Object, paused, k.PausePath...); err != nil {
		return edit{}, fmt.Errorf("setting %s: %w", strings.Join(k.PausePath, "."), err)
	}
	return mergeEdit(nested(k.PausePath, paused), preview)
}

// planRestart makes a workload replace its pods: the restartedAt template annotation for native kinds;
// for kruise kinds both the kubectl.kruise.io/restartedAt annotation (what older tools look for) and the
// RESTARTED_AT variable in every container (what makes in-place workloads recreate their pods).
func planRestart(k *workloadKind, obj *unstructured.Unstructured, now time.Time) (edit, error) {
	stamp := now.Format(time.RFC3339)
	switch k.Restart {
	case restartAnnotation:
		return planRestartAnnotation(k, obj, stamp)
	case restartEnv:
		return planRestartEnv(obj, stamp)
	default:
		return edit{}, fmt.Errorf("restarting is not supported")
	}
}

func planRestartAnnotation(k *workloadKind, obj *unstructured.Unstructured, stamp string) (edit, error) {
	if paused, _, _ := unstructured.NestedBool(obj.Object, "spec", "paused"); paused && k == kindDeployment {
		return edit{}, fmt.Errorf("can't restart paused deployment (run rollout resume first)")
	}
	path := []string{"spec", "template", "metadata", "annotations", restartedAtAnnotation}
	preview := obj.DeepCopy()
	if err := unstructured.SetNestedField(preview.Object, stamp, path...); err != nil {
		return edit{}, fmt.Errorf("setting the %s annotation: %w", restartedAtAnnotation, err)
	}
	return mergeEdit(nested(path, stamp), preview)
}

func planRestartEnv(obj *unstructured.Unstructured, stamp string) (edit, error) {
	preview, lists, _, err := changedContainerLists(obj, func(c map[string]any) (bool, error) {
		return true, setContainerEnv(c, []corev1.EnvVar{{Name: restartedAtEnv, Value: stamp}}, nil)
	})
	if err != nil {
		return edit{}, err
	}
	path := []string{"spec", "template", "metadata", "annotations", kruiseRestartedAtAnnotation}
	if err := unstructured.SetNestedField(preview.Object, stamp, path...); err != nil {
		return edit{}, fmt.Errorf("setting the %s annotation: %w", kruiseRestartedAtAnnotation, err)
	}
	template := map[string]any{"metadata": map[string]any{"annotations": map[string]any{kruiseRestartedAtAnnotation: stamp}}}
	if len(lists) > 0 {
		template["spec"] = lists
	}
	patch := withResourceVersion(map[string]any{"spec": map[string]any{"template": template}}, obj)
	return mergeEdit(patch, preview)
}
