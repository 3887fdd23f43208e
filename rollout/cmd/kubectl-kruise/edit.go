package main

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// edit is one planned change of an object: the patch to send, and the object as it will look, which
// --dry-run=client prints. A nil Patch means nothing needs to change.
type edit struct {
	Type    types.PatchType
	Patch   []byte
	Preview *unstructured.Unstructured
}

// mergeEdit encodes a JSON merge patch.
func mergeEdit(patch map[string]any, preview *unstructured.Unstructured) (edit, error) {
	data, err := json.Marshal(patch)
	if err != nil {
		return edit{}, fmt.Errorf("encoding the patch: %w", err)
	}
	return edit{Type: types.MergePatchType, Patch: data, Preview: preview}, nil
}

// nested builds {"a":{"b":{...: value}}} for a field path.
func nested(path []string, value any) map[string]any {
	out := map[string]any{path[len(path)-1]: value}
	for i := len(path) - 2; i >= 0; i-- {
		out = map[string]any{path[i]: out}
	}
	return out
}

// withResourceVersion adds the object's resourceVersion to a merge patch, so the write fails with a
// conflict instead of overwriting a change made since the read: needed whenever the patch replaces a
// whole list (containers, podsToDelete) computed from what was read.
func withResourceVersion(patch map[string]any, obj *unstructured.Unstructured) map[string]any {
	patch["metadata"] = map[string]any{"resourceVersion": obj.GetResourceVersion()}
	return patch
}

// podTemplate decodes the workload's spec.template.
func podTemplate(obj *unstructured.Unstructured) (corev1.PodTemplateSpec, error) {
	var t corev1.PodTemplateSpec
	raw, _, err := unstructured.NestedMap(obj.Object, "spec", "template")
	if err != nil {
		return t, fmt.Errorf("reading spec.template: %w", err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &t); err != nil {
		return t, fmt.Errorf("decoding spec.template: %w", err)
	}
	return t, nil
}

// containerFields are the template lists that hold containers a command may change.
var containerFields = []string{"initContainers", "containers"}

// containerEditor changes one container (a map straight from the object, so fields this client does not
// know survive) and reports whether it matched the command's selection.
type containerEditor func(c map[string]any) (matched bool, err error)

// editContainers runs fn over copies of the template's init containers and containers. The patch
// replaces each changed list whole (JSON merge patches cannot address list items), guarded by the
// resourceVersion. It returns how many containers matched.
func editContainers(obj *unstructured.Unstructured, fn containerEditor) (edit, int, error) {
	preview, lists, matched, err := changedContainerLists(obj, fn)
	if err != nil {
		return edit{}, 0, err
	}
	if len(lists) == 0 {
		return edit{Preview: preview}, matched, nil
	}
	patch := withResourceVersion(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": lists}}}, obj)
	e, err := mergeEdit(patch, preview)
	return e, matched, err
}

// changedContainerLists edits a copy of obj with fn and returns it, with the container lists that changed.
func changedContainerLists(obj *unstructured.Unstructured, fn containerEditor) (*unstructured.Unstructured, map[string]any, int, error) {
	preview := obj.DeepCopy()
	lists := map[string]any{}
	matched := 0
	for _, field := range containerFields {
		n, changed, err := editList(preview, field, fn)
		if err != nil {
			return nil, nil, 0, err
		}
		matched += n
		if changed != nil {
			lists[field] = changed
		}
	}
	return preview, lists, matched, nil
}

// editList edits one container list of preview in place; it returns the list when it changed.
func editList(preview *unstructured.Unstructured, field string, fn containerEditor) (int, []any, error) {
	path := []string{"spec", "template", "spec", field}
	items, found, err := unstructured.NestedSlice(preview.Object, path...)
	if err != nil || !found {
		return 0, nil, wrapField(err, path)
	}
	before := runtime.DeepCopyJSONValue(items)
	matched := 0
	for i, item := range items {
		c, ok := item.(map[string]any)
		if !ok {
			return 0, nil, fmt.Errorf("%s[%d] is not an object", strings.Join(path, "."), i)
		}
		m, err := fn(c)
		if err != nil {
			return 0, nil, err
		}
		if m {
			matched++
		}
	}
	if equalJSON(before, items) {
		return matched, nil, nil
	}
	return matched, items, unstructured.SetNestedSlice(preview.Object, items, path...)
}

func wrapField(err error, path []string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("reading %s: %w", strings.Join(path, "."), err)
}

// equalJSON compares two JSON-like values by their encoding.
func equalJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// decodeField decodes c[key] (absent or null: zero) into out, e.g. a container's env or resources.
func decodeField(c map[string]any, key string, out any) error {
	v, ok := c[key]
	if !ok || v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(raw, out)
	}
	if err != nil {
		return fmt.Errorf("decoding %s of container %v: %w", key, c["name"], err)
	}
	return nil
}

// encodeField stores v as c[key] in its JSON form, or removes the key when v encodes to an empty value.
func encodeField(c map[string]any, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", key, err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("encoding %s: %w", key, err)
	}
	if isEmptyJSON(out) {
		delete(c, key)
		return nil
	}
	c[key] = out
	return nil
}

func isEmptyJSON(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	default:
		return false
	}
}
