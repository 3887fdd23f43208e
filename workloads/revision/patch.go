// Package revision builds ControllerRevisions for template-bearing workloads (CloneSet, Advanced StatefulSet,
// Advanced DaemonSet) byte for byte as upstream OpenKruise does, and plans their history. Revision names end up in the
// controller-revision-hash label of every pod, so the same template must give the same name as under
// upstream, or all pods created by upstream would look outdated after a switch to Flotilla.
package revision

import (
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// ErrNilTemplate is returned for a nil pod template.
var ErrNilTemplate = errors.New("revision: nil pod template")

// TemplatePatch returns the revision data upstream records for a pod template:
// {"spec":{"template":{...,"$patch":"replace"}}}, the strategic merge patch `kubectl kruise rollout undo`
// applies to the workload. The template must already be defaulted (see workloads/podtemplate).
func TemplatePatch(t *corev1.PodTemplateSpec) ([]byte, error) {
	tmpl, err := upstreamTemplateMap(t)
	if err != nil {
		return nil, err
	}
	tmpl["$patch"] = "replace"
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": tmpl}})
	if err != nil {
		return nil, fmt.Errorf("encode revision data: %w", err)
	}
	return data, nil
}

// upstreamTemplateMap decodes the template's JSON into generic maps, as upstream does before adding
// "$patch": numbers thereby become float64 and map keys get sorted when encoded again, exactly as upstream.
func upstreamTemplateMap(t *corev1.PodTemplateSpec) (map[string]any, error) {
	if t == nil {
		return nil, ErrNilTemplate
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encode pod template: %w", err)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		return nil, fmt.Errorf("decode pod template: %w", err)
	}
	restoreNullCreationTimestamps(tmpl)
	return tmpl, nil
}

// restoreNullCreationTimestamps writes "creationTimestamp":null into every object metadata of the template.
// Upstream is built with k8s.io/api v0.32, which encodes an unset creation time as null; since v0.34 the
// field is tagged omitzero and left out. Diffing the JSON tags of every type reachable from PodTemplateSpec
// in v0.32.10 and v0.37.2 shows this as the only difference on the wire: all fields added since are
// omitempty pointers or slices, absent when unset (and absent from upstream, which drops them on decode),
// and the marshalers of Time, Quantity and IntOrString are unchanged. TestOmitzeroFieldsAreCompensated
// fails if a k8s.io/api bump adds another omitzero field.
func restoreNullCreationTimestamps(tmpl map[string]any) {
	setNullCreationTimestamp(tmpl)
	spec, _ := tmpl["spec"].(map[string]any)
	volumes, _ := spec["volumes"].([]any)
	for _, v := range volumes {
		volume, _ := v.(map[string]any)
		ephemeral, _ := volume["ephemeral"].(map[string]any)
		if claim, ok := ephemeral["volumeClaimTemplate"].(map[string]any); ok {
			setNullCreationTimestamp(claim)
		}
	}
}

func setNullCreationTimestamp(obj map[string]any) {
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return
	}
	if _, set := meta["creationTimestamp"]; !set {
		meta["creationTimestamp"] = nil
	}
}
