package plan

import (
	"encoding/json"
	"fmt"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// RevisionData is what a UnitedDeployment's ControllerRevision records, byte for byte as upstream: its
// spec.template as a patch that replaces the template when applied, {"spec":{"template":{"$patch":"replace",
// ...}}}, encoded from generic maps (sorted keys). The revision's name hashes it, and every subset workload
// carries that name: a UnitedDeployment taken over from upstream must hash the same, or every pod would look
// outdated.
func RevisionData(ud *kruiseappsv1alpha1.UnitedDeployment) ([]byte, error) {
	raw, err := json.Marshal(ud.Spec.Template)
	if err != nil {
		return nil, fmt.Errorf("encoding spec.template: %w", err)
	}
	template := map[string]any{}
	if err := json.Unmarshal(raw, &template); err != nil {
		return nil, fmt.Errorf("decoding spec.template: %w", err)
	}
	for _, workload := range template {
		restoreNullCreationTimestamps(workload)
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// restoreNullCreationTimestamps writes "creationTimestamp":null into every object metadata of a workload
// template: upstream is built with a k8s.io/apimachinery that encodes an unset creation time as null, which
// newer releases leave out (see workloads/revision, which does the same for pod templates).
func restoreNullCreationTimestamps(workload any) {
	w, _ := workload.(map[string]any)
	nullCreation(w)
	spec, _ := w["spec"].(map[string]any)
	pod, _ := spec["template"].(map[string]any)
	nullCreation(pod)
	podSpec, _ := pod["spec"].(map[string]any)
	volumes, _ := podSpec["volumes"].([]any)
	for _, v := range volumes {
		volume, _ := v.(map[string]any)
		ephemeral, _ := volume["ephemeral"].(map[string]any)
		claim, _ := ephemeral["volumeClaimTemplate"].(map[string]any)
		nullCreation(claim)
	}
	claims, _ := spec["volumeClaimTemplates"].([]any)
	for _, c := range claims {
		claim, _ := c.(map[string]any)
		nullCreation(claim)
	}
}

func nullCreation(obj map[string]any) {
	if meta, ok := obj["metadata"].(map[string]any); ok {
		if _, set := meta["creationTimestamp"]; !set {
			meta["creationTimestamp"] = nil
		}
	}
}
