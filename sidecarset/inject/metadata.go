package inject

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// patchMetadata applies a SidecarSet's patchPodMetadata to the pod's annotations: Retain (the default) keeps
// a value the pod has, Overwrite replaces it, MergePatchJson JSON-merge-patches it.
func patchMetadata(pod *corev1.Pod, patches []kruiseappsv1alpha1.SidecarSetPatchPodMetadata) error {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for i, p := range patches {
		for _, key := range slices.Sorted(maps.Keys(p.Annotations)) {
			value := p.Annotations[key]
			old, exists := pod.Annotations[key]
			switch p.PatchPolicy {
			case kruiseappsv1alpha1.SidecarSetRetainPatchPolicy, "":
				if !exists {
					pod.Annotations[key] = value
				}
			case kruiseappsv1alpha1.SidecarSetOverwritePatchPolicy:
				pod.Annotations[key] = value
			case kruiseappsv1alpha1.SidecarSetMergePatchJsonPatchPolicy:
				merged, err := mergePatchJSON(old, value)
				if err != nil {
					return fmt.Errorf("spec.patchPodMetadata[%d].annotations[%s]: %w", i, key, err)
				}
				pod.Annotations[key] = merged
			default:
				return fmt.Errorf("spec.patchPodMetadata[%d].patchPolicy: Unsupported value: %q", i, p.PatchPolicy)
			}
		}
	}
	return nil
}

// mergePatchJSON applies patch to doc as an RFC 7386 JSON merge patch; an empty doc takes the patch as is,
// as upstream does.
func mergePatchJSON(doc, patch string) (string, error) {
	if doc == "" {
		return patch, nil
	}
	p, err := decodeJSON(patch)
	if err != nil {
		return "", fmt.Errorf("the patch is not JSON: %w", err)
	}
	d, err := decodeJSON(doc)
	if err != nil {
		return "", fmt.Errorf("the pod's value is not JSON: %w", err)
	}
	out, err := json.Marshal(mergeJSON(d, p))
	if err != nil {
		return "", err
	}
	return string(out), nil
}

func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber() // keep numbers as written
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// mergeJSON merges patch into doc: objects merge key by key, null deletes, anything else replaces.
func mergeJSON(doc, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(d, k)
			continue
		}
		d[k] = mergeJSON(d[k], v)
	}
	return d
}

// metadataConflicts finds annotations two SidecarSets both patch where one overwrites: upstream refuses such
// SidecarSets when they select the same pods; a pod matched by both anyway is refused, since which value it
// would get depends on the order.
func metadataConflicts(sources []Source) error {
	type claim struct {
		set    string
		policy kruiseappsv1alpha1.SidecarSetPatchPolicyType
	}
	claims := map[string]claim{}
	for _, src := range sources {
		for i, p := range src.Set.Spec.PatchPodMetadata {
			if p.PatchPolicy == kruiseappsv1alpha1.SidecarSetRetainPatchPolicy || p.PatchPolicy == "" {
				continue
			}
			for _, key := range slices.Sorted(maps.Keys(p.Annotations)) {
				other, ok := claims[key]
				if ok && other.set != src.Set.Name && (p.PatchPolicy == kruiseappsv1alpha1.SidecarSetOverwritePatchPolicy ||
					other.policy == kruiseappsv1alpha1.SidecarSetOverwritePatchPolicy) {
					return fmt.Errorf("SidecarSet %s: spec.patchPodMetadata[%d].annotations[%s]: Forbidden: conflicts with SidecarSet %s, which patches it too (%s and %s)",
						src.Set.Name, i, key, other.set, p.PatchPolicy, other.policy)
				}
				if !ok {
					claims[key] = claim{set: src.Set.Name, policy: p.PatchPolicy}
				}
			}
		}
	}
	return nil
}
