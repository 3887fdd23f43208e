package webhooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// PatchResponse allows the request with the JSON patch that makes its raw object what out is to cur: what the
// strategic merge patch from cur to out, merged into raw, changes, so that fields raw holds that the types do
// not know stay. The pod webhook pays it on every pod creation, so the usual change is read off the typed
// values (directPatch) and only the rest takes the merge, done on decoded objects rather than on JSON text,
// which would parse the object three times and print it twice.
func PatchResponse[T any](raw []byte, cur, out *T) (admission.Response, error) {
	ops, err := rawPatch(raw, cur, out)
	if err != nil {
		return admission.Response{}, err
	}
	return admission.Patched("", ops...), nil
}

// PatchOrReplace is PatchResponse or, when the strategic merge cannot combine the change with the raw object,
// the patch to the whole typed object, as upstream answers.
func PatchOrReplace[T any](raw []byte, cur, out *T) admission.Response {
	if resp, err := PatchResponse(raw, cur, out); err == nil {
		return resp
	}
	whole, err := json.Marshal(out)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encoding the object: %w", err))
	}
	return admission.PatchResponseFromRaw(raw, whole)
}

// rawPatch is directPatch where it can tell the change, strategicPatch where it cannot.
func rawPatch[T any](raw []byte, cur, out *T) ([]jsonpatch.JsonPatchOperation, error) {
	ops, err := directPatch(raw, cur, out)
	if !errors.Is(err, errNotDirect) {
		return ops, err
	}
	return strategicPatch(raw, cur, out)
}

// strategicPatch computes the strategic merge patch from cur to out, merges it into raw as a map, and diffs
// the result against raw.
func strategicPatch[T any](raw []byte, cur, out *T) ([]jsonpatch.JsonPatchOperation, error) {
	before, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
	if err != nil {
		return nil, err
	}
	after, err := runtime.DefaultUnstructuredConverter.ToUnstructured(out)
	if err != nil {
		return nil, err
	}
	change, err := strategicpatch.CreateTwoWayMergeMapPatch(before, after, cur)
	if err != nil || len(change) == 0 {
		return nil, err
	}
	var doc map[string]any
	if err := utiljson.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("decoding the object: %w", err)
	}
	// The merge changes the map it is given.
	merged, err := strategicpatch.StrategicMergeMapPatch(runtime.DeepCopyJSON(doc), change, cur)
	if err != nil {
		return nil, err
	}
	var ops []jsonpatch.JsonPatchOperation
	diffMaps("", doc, merged, &ops)
	return ops, nil
}

// diffJSON appends to ops what turns a into b at path: keys removed, added and changed, in key order; a list
// of the same length element by element, one that only grew at its end by its new elements, any other
// changed list whole.
func diffJSON(path string, a, b any, ops *[]jsonpatch.JsonPatchOperation) {
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok {
			diffMaps(path, av, bv, ops)
			return
		}
	case []any:
		if bv, ok := b.([]any); ok && diffLists(path, av, bv, ops) {
			return
		}
	}
	if !reflect.DeepEqual(a, b) {
		*ops = append(*ops, jsonpatch.NewOperation("replace", path, b))
	}
}

// diffLists diffs lists of the same length, or a list appended to; false for any other change.
func diffLists(path string, a, b []any, ops *[]jsonpatch.JsonPatchOperation) bool {
	switch {
	case len(a) == len(b):
		for i := range a {
			diffJSON(path+"/"+strconv.Itoa(i), a[i], b[i], ops)
		}
	case len(a) < len(b) && reflect.DeepEqual(a, b[:len(a)]):
		for i := len(a); i < len(b); i++ {
			*ops = append(*ops, jsonpatch.NewOperation("add", path+"/"+strconv.Itoa(i), b[i]))
		}
	default:
		return false
	}
	return true
}

func diffMaps(path string, a, b map[string]any, ops *[]jsonpatch.JsonPatchOperation) {
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if _, ok := b[k]; !ok {
			*ops = append(*ops, jsonpatch.NewOperation("remove", path+"/"+escapePointer(k), nil))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if av, ok := a[k]; ok {
			diffJSON(path+"/"+escapePointer(k), av, b[k], ops)
		} else {
			*ops = append(*ops, jsonpatch.NewOperation("add", path+"/"+escapePointer(k), b[k]))
		}
	}
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(key string) string { return pointerEscaper.Replace(key) }
